"""How every suite times its contenders, so that a ratio in one suite means what it means in another.

A contender is a call that computes one result. `compare` checks each contender's warm-up result (a
wrong answer must never win a race), then times them all in interleaved rounds: the machine's drift, and
the page-fault and compaction costs a memory-hungry contender leaves behind, then hit every contender
alike. Within a round each call is sampled as one call or, when it is shorter than `min_sample`, as
the mean of a batch of back-to-back calls lasting about that long (a lone 50 µs call is mostly timer
and cold-cache noise); each round starts one contender later, so none always follows the same one; the
garbage collector runs between rounds, never inside a sample. Medians of the rounds are reported.

The warm-up call is never timed: it pays for JIT compilation (pydata's numba), lazy kernel loading and
first-touch page faults. A contender whose first timed call exceeds `budget` seconds is timed by that
call alone, so that one slow peer does not hold a suite for an hour.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

MIN_SAMPLE = 0.02
MAX_BATCH = 1000


class Mismatch(Exception):
    """A contender's result disagrees with the expected one (as opposed to a contender that cannot run)."""


@dataclass
class Timing:
    seconds: float | None = None  # the median sample
    runs: int = 0  # timed samples
    status: str = ""  # "": timed; "WRONG": its result disagreed; "ERROR": it raised; suites add "n/a", "FAIL"
    detail: str = ""


Check = Callable[[Any], None]  # raises Mismatch (or anything else) when a result is not the expected one


def seconds_of(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def batch_for(seconds: float, min_sample: float = MIN_SAMPLE) -> int:
    """How many back-to-back calls of `seconds` each make one sample."""
    return max(1, min(MAX_BATCH, int(min_sample / max(seconds, 1e-7))))


def sample(call: Callable[[], Any], batch: int) -> float:
    """Seconds per call over `batch` back-to-back calls, each result dropped before the next call."""
    start = time.perf_counter()
    for _ in range(batch):
        call()
    return (time.perf_counter() - start) / batch


def fastest(seconds: dict[str, float | None]) -> tuple[str, float] | None:
    """The name and time of the fastest of `seconds` (None: not timed), or None when none was timed: the
    "fastest peer" every kernel table shows, since a ratio against one chosen peer hides a faster one."""
    timed = [(taken, name) for name, taken in seconds.items() if taken is not None]
    if not timed:
        return None
    taken, name = min(timed)
    return name, taken


def compare(contenders: dict[str, tuple[Callable[[], Any], Check | None]], repeat: int, *,
            budget: float = math.inf, min_sample: float = MIN_SAMPLE, warm_up: bool = True) -> dict[str, Timing]:
    """Each contender (name -> (call, check of its result)) checked once, then timed in `repeat`
    interleaved rounds; a contender whose check or call raised is reported, not timed. Without
    `warm_up` (calls with nothing to warm, minutes long), the checked call is also the first timed one."""
    timings = {name: Timing() for name in contenders}
    batches: dict[str, int] = {}
    for name, (call, check) in contenders.items():
        timing = timings[name]
        try:
            start = time.perf_counter()
            result = call()
            first = time.perf_counter() - start
            if check is not None:
                check(result)
        except Exception as error:  # noqa: BLE001 - a contender that fails is reported, and the suite goes on
            timing.status = "WRONG" if isinstance(error, Mismatch) else "ERROR"
            timing.detail = f"{type(error).__name__}: {error}"
            continue
        finally:
            result = None
        once = seconds_of(call) if warm_up else first
        if once > budget:
            timing.seconds, timing.runs = once, 1
        else:
            batches[name] = batch_for(once, min_sample)
    samples = interleaved({name: contenders[name][0] for name in batches}, batches, repeat)
    for name, taken in samples.items():
        timings[name].seconds, timings[name].runs = statistics.median(taken), len(taken)
    return timings


def interleaved(calls: dict[str, Callable[[], Any]], batches: dict[str, int], repeat: int) -> dict[str, list[float]]:
    """`repeat` samples of every call, taken round-robin, each round starting one call later."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls.items())
    for round_number in range(repeat if calls else 0):  # no rounds, so no collections, with nothing to time
        shift = round_number % max(len(order), 1)
        gc.collect()
        gc.disable()
        try:
            for name, call in order[shift:] + order[:shift]:
                samples[name].append(sample(call, batches[name]))
        finally:
            gc.enable()
    return samples

