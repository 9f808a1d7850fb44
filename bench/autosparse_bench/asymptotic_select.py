"""Selection on real inputs (Ahrens et al.'s six kernels): the candidate `front.select` picks, against the
default schedule (`schedule=None`) and against every candidate of the frontier, timed on the same data.

    autosparse bench asymptotic                        # every kernel, uniform + power-law + real data
    autosparse bench asymptotic --kernel SpMV2 --no-real --max-n 4096

Inputs per kernel: uniform random square operands at density 0.01 with n doubling from --start until the
default schedule takes more than a second (or the operands would pass --max-nnz nonzeros); R-MAT
power-law matrices (Graph500 parameters a=.57, b=c=.19, 16 nonzeros per row) or, for the 3-tensor, a
tensor whose coordinates crowd towards zero in every mode; the shipped real matrices and tensors of
../shared/data (a kernel's matrices are all the one matrix; SpMTTKRP reads a real tensor with random
factor matrices of --rank rows at density 0.01).

Each candidate runs in a child process forked from this one, so that a candidate that is asymptotically
fine but slow on these inputs, or that runs out of memory, is cut off (after --timeout for the default
and the selected candidate; for the others once a warm-up call passes 3 × their limit or a timed call
passes their limit, max(0.05 s, 1.5 × the fastest so far)) without losing the run; a cut candidate is
slower than the fastest and cannot be the fastest. Candidates are timed in the order of select's
estimates, so the selected one is timed first. With --jobs 2 the kernels are shared out between two
worker processes (longest first), which print their rows as they finish them; the summary counts all. Times are medians of up to 5 calls after a warm-up call on
operands already in the candidate's formats; reformatting the operands into those formats (transposes)
is timed on its own and reported beside. Every timed result is checked against the default's (sum and
sum of squares of the values), or the first candidate timed where the default was cut off. The default,
the contenders of select's tie and the fastest candidate are then timed in two more alternating rounds,
each keeping its best median, so that the ratios reported (and the tie's decision, made after them: the
fastest contender, as `schedule="auto"`'s calls decide it) do not rest on one sample taken while the
machine was busier.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import resource
import select as poll
import signal
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from itertools import repeat

import numpy as np

import autosparse as asp
from autosparse_bench import data, quick_sizes
from autosparse.autoschedule import tiebreak
from autosparse.autoschedule.select import ranking
from autosparse.notation import accesses, parse

from .asymptotic_counts import KERNELS
from .records import Records, add_option, source_hash
from .timing import batch_for, sample

DATA = data.shipped_data()
REAL_MATRICES = ("CollegeMsg", "bcsstk13", "facebook_combined", "Wiki-Vote", "4elt")
REAL_TENSORS = ("yelp", "CollegeMsg", "med")
CHILD_MEMORY = 12 << 30  # address space a timed child may add to what it inherits
SLOWEST_FIRST = ("SpMTTKRP", "SpGEMMH", "SpGEMM2", "SpMV2", "SpGEMM", "SpMV")


# --- inputs ------------------------------------------------------------------------------------------


def uniform(rng, shape, density):
    """A random sparse pattern with about density × size distinct coordinates, values in (0, 1]."""
    size = int(np.prod(shape, dtype=np.int64))
    want = max(1, int(density * size))
    flat = np.unique(rng.integers(0, size, int(want * 1.01) + 16, dtype=np.int64))[:want]
    rng.shuffle(flat)
    return np.stack(np.unravel_index(np.sort(flat), shape)), 1.0 - rng.random(len(flat))


def rmat(rng, scale):
    """R-MAT coordinates and values of a 2^scale square matrix (Graph500 parameters, duplicates merged)."""
    matrix = data.rmat(scale, seed=int(rng.integers(2**31))).tocoo()
    return np.stack([matrix.row, matrix.col]).astype(np.int64), matrix.data


def skewed(rng, shape, nnz):
    """Coordinates drawn as floor(dim · u³) per mode: most nonzeros crowd into low slices."""
    coords = np.stack([np.floor(d * rng.random(nnz) ** 3).astype(np.int64) for d in shape])
    flat = np.unique(np.ravel_multi_index(tuple(coords), shape))
    return np.stack(np.unravel_index(flat, shape)), 1.0 - rng.random(len(flat))


def operands_for(name, shapes, rng, sparse_maker):
    """The kernel's operands: sparse ones from `sparse_maker(shape)`, dense ones random."""
    expression, formats = KERNELS[name]
    found = {}
    for access in accesses(parse(expression).rhs):
        shape = tuple(shapes[i.name] for i in access.indices)
        fmt = formats.get(access.tensor)
        if fmt is None:
            found[access.tensor] = asp.Tensor.from_numpy(rng.random(shape))
        else:
            coords, values = sparse_maker(access.tensor, shape)
            found[access.tensor] = asp.Tensor.from_coo(coords, values, shape, format=fmt)
    return found


def index_names(name):
    return list(dict.fromkeys(i.name for a in accesses(parse(KERNELS[name][0]).rhs) for i in a.indices))


def uniform_inputs(name, rng, n):
    shapes = {i: n for i in index_names(name)}
    return operands_for(name, shapes, rng, lambda _, shape: uniform(rng, shape, 0.01))


def power_law_inputs(name, rng, scale):
    n = 1 << scale
    shapes = {i: n for i in index_names(name)}
    if name == "SpMTTKRP":
        return operands_for(name, shapes, rng, lambda _, shape: skewed(rng, shape, 16 * n * (len(shape) - 1)))
    return operands_for(name, shapes, rng, lambda _, shape: rmat(rng, scale))


def real_inputs(name, rng, dataset, rank):
    if name == "SpMTTKRP":
        tensor = asp.read(DATA / f"{dataset}.tns.gz", format="dss")
        shapes = dict(zip(("i", "k", "l"), tensor.shape), j=rank)
        return operands_for(name, shapes, rng,
                            lambda name, shape: tensor.to_coo() if name == "B" else uniform(rng, shape, 0.01))
    matrix = asp.read(DATA / f"{dataset}.mtx.gz", format="ds")
    n = matrix.shape[0]
    if matrix.shape[0] != matrix.shape[1]:
        return None
    shapes = {i: n for i in index_names(name)}
    return operands_for(name, shapes, rng, lambda tensor, shape: matrix.to_coo())


# --- timing in a child ---------------------------------------------------------------------------------


def in_child(work, timeout):
    """`work()`'s JSON-able result, run in a forked child; "timeout" or "failed: …" otherwise. The child
    freezes what it inherits out of the garbage collector's sight: a parent that ranked a 20-s front holds
    millions of objects, and the child's first full collection walked them all (and copied their pages),
    which made TTMc's first `schedule="auto"` call 3.4 s against 0.87 s in a fresh process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        gc.freeze()
        try:
            pages = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
            resource.setrlimit(resource.RLIMIT_AS, (pages + CHILD_MEMORY, pages + CHILD_MEMORY))
            message = json.dumps(work())
        except BaseException as error:  # noqa: BLE001 - reported to the parent, whatever it was
            message = json.dumps(f"failed: {type(error).__name__}: {error}"[:200])
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    ready, _, _ = poll.select([read], [], [], timeout)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
        return "timeout"
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return f"failed: child exited with status {status}"
    return json.loads(b"".join(chunks))


def timed(kernel, operands, limit=None):
    """Median seconds of up to 5 samples after a warm-up call (fewer when a call is long, but always
    one: a first call pays for faulting in fresh result and workspace pages, which can take several
    times a warm call; a call under 10 ms is sampled as a batch, timing.batch_for), and a checksum of
    the result. A warm-up call past 3 × `limit`, or a sample past `limit`, ends the timing there
    ("cut"): the candidate is slower than the limit, and the samples left cannot change that."""
    start = time.perf_counter()
    result = kernel(**operands)
    first = time.perf_counter() - start
    if limit is not None and first > 3 * limit:
        return {"seconds": first, "cut": True}
    values = np.asarray(result.vals if isinstance(result, asp.Tensor) else result, dtype=float)
    checksum = {"sum": float(values.sum()), "squares": float((values * values).sum())}
    result = values = None
    batch = batch_for(first) if first < 0.01 else 1
    samples = []
    for _ in range(5 if first < 0.2 else 3 if first < 2 else 1):
        samples.append(sample(lambda: kernel(**operands), batch))
        if limit is not None and samples[-1] > limit:
            return {"seconds": samples[-1], "cut": True}
    return {"seconds": statistics.median(samples), **checksum}


def compiled_for(kernel, operands):
    """`kernel`, its code compiled here on empty 3-wide stand-ins of `operands` (same formats and index
    types), so that a child's time limit covers the run only."""
    stand_ins = {}
    for name, tensor in operands.items():
        if not isinstance(tensor, asp.Tensor):  # a numpy array
            stand_ins[name] = np.zeros((3,) * np.ndim(tensor))
            continue
        shape = (3,) * tensor.order
        if tensor.format.is_dense:
            stand_ins[name] = asp.Tensor.from_numpy(np.zeros(shape), format=tensor.format)
        else:
            stand_ins[name] = asp.Tensor.from_coo(np.zeros((tensor.order, 0), dtype=np.int64), [], shape,
                                                  format=tensor.format, index_dtype=tensor.index_dtype)
    kernel(**stand_ins)
    return kernel


def agrees(a, b):
    return all(np.isclose(a[k], b[k], rtol=1e-6, atol=1e-9) for k in ("sum", "squares"))


# --- one input -----------------------------------------------------------------------------------------


def reformatted(operands, formats, cache):
    """Operands in `formats`, and the seconds spent reformatting the ones not already so (each pair of
    operand and format converted once, timed as the median of 3)."""
    found, seconds = {}, 0.0
    for name, tensor in operands.items():
        fmt = formats.get(name, tensor.format)
        if fmt == tensor.format:
            found[name] = tensor
            continue
        key = (name, str(fmt))
        if key not in cache:
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                converted = tensor.to_format(fmt)
                runs.append(time.perf_counter() - start)
            cache[key] = (converted, statistics.median(runs))
        found[name], spent = cache[key]
        seconds += spent
    return found, seconds


def measure_input(name, front, operands, args):
    expression, formats = KERNELS[name]
    return measure_front(expression, formats, front, operands, args.timeout)


def ranked(front, operands, first):
    """The indices of `front` in the order of select's estimates (`select.ranking`), `first` first."""
    order = {id(cand): n for n, (_, cand) in enumerate(ranking(front, operands))}
    return sorted(range(len(front)), key=lambda n: (front[n] is not first, order[id(front[n])]))


def measure_front(expression, formats, front, operands, timeout, sample=None):
    """(default's outcome, the chosen candidate, select's seconds, [candidate, outcome, transposes] per
    candidate timed, the sources' hashes): every candidate of `front` (or those `sample(order)` keeps of
    the ranked indices, and every contender of the tie) timed in a child on `operands`, each result
    checked against the default's (where the default was cut off, against the first candidate timed).

    Selecting is what `schedule="auto"` does before its first call: the estimate (`select.ranking`) and
    the tie it leaves (`tiebreak.trial`), which the user's calls then decide by timing each contender;
    the chosen candidate is the contender these timings find fastest, as that trial would."""
    default_kernel = compiled_for(asp.compile(expression, formats=formats, num_threads=1), operands)  # as candidates
    hashes = {"default schedule": source_hash(default_kernel)}
    default = in_child(lambda: timed(default_kernel, operands), timeout + 30)
    start = time.perf_counter()
    contenders = tiebreak.trial(front, ranking(front, operands), operands).contenders
    select_seconds = time.perf_counter() - start
    order = ranked(front, operands, contenders[0])
    tie = [n for n in order if any(front[n] is c for c in contenders)]
    kept = order if sample is None else sample(order, tie)
    seen, conversions, timings, runs = set(), {}, [], {}
    best = None
    reference = (default, "the default") if isinstance(default, dict) else None  # else the first timed's
    for n in kept:
        cand = front[n]
        key = (str(cand.cin), tuple(sorted((k, str(v)) for k, v in cand.formats.items())))
        if key in seen:
            continue
        seen.add(key)
        ready, transposes = reformatted(operands, cand.formats, conversions)
        kernel = compiled_for(asp.compile(expression, formats=candidate_formats(formats, cand), schedule=cand),
                              ready)
        limit = timeout if best is None or any(cand is c for c in contenders) else max(0.05, 1.5 * best)
        outcome = in_child(lambda: timed(kernel, ready, limit), 4 * limit + 1)
        if isinstance(outcome, dict):
            if reference is None and not outcome.get("cut"):
                reference = (outcome, "the first candidate timed")
            if outcome.get("cut"):
                outcome = "timeout"
            elif not agrees(outcome, reference[0]):
                outcome = (f"failed: result differs from {reference[1]}'s ({outcome['sum']} vs "
                           f"{reference[0]['sum']})")
            elif outcome["seconds"] > limit:
                outcome = "timeout"
            else:
                outcome["checked against"] = reference[1]
        timings.append([cand, outcome, transposes])
        runs[id(cand)] = (kernel, ready)
        hashes[id(cand)] = source_hash(kernel)
        if isinstance(outcome, dict):
            best = outcome["seconds"] if best is None else min(best, outcome["seconds"])
    default = confirmed(default, timings, contenders, runs, default_kernel, operands)
    if any(front.default is c for c in contenders):  # the default schedule competes in the tie as it runs
        timings.insert(0, [front.default, {**default, "checked against": "itself (the reference)"}
                           if isinstance(default, dict) else default, 0.0])
        runs[id(front.default)], hashes[id(front.default)] = (default_kernel, operands), hashes["default schedule"]
    return default, _fastest_contender(contenders, timings), select_seconds, timings, hashes


def _fastest_contender(contenders, timings):
    """The contender a trial keeps: the fastest timed, reformatting the operands included as the trial's
    calls pay it (equal times: the estimate's order); none timed: the estimate's best."""
    seconds = {id(c): o["seconds"] + t for c, o, t in timings if isinstance(o, dict)}  # a call as the user pays it
    timed = [c for c in contenders if id(c) in seconds]
    return min(timed, key=lambda c: seconds[id(c)]) if timed else contenders[0]


def candidate_formats(formats, cand):
    """The formats to compile `cand` with: the kernel's own, the candidate's where it names a tensor the
    kernel gives a format. The result's stays: a candidate that leaves it out would get the one inferred
    for hand-written CIN, dense, and time filling an n × n array instead of its sparse result."""
    return {**formats, **{k: str(v) for k, v in cand.formats.items() if k in formats}}


def confirmed(default, timings, contenders, runs, default_kernel, operands, rounds=2):
    """Re-time the default, every contender of the tie and the fastest candidate in `rounds` more
    alternating rounds and keep each one's best median: the comparisons that matter (and the tie's
    decision, made after them) then do not rest on one sample taken while the machine was busier."""
    done = [t for t in timings if isinstance(t[1], dict)]
    if not done:
        return default
    again_too = [t for t in done if any(t[0] is c for c in contenders)]
    for fastest in (min(done, key=lambda t: t[1]["seconds"]), min(done, key=lambda t: t[1]["seconds"] + t[2])):
        if all(fastest[0] is not c[0] for c in again_too):
            again_too.append(fastest)
    for _ in range(rounds):
        if isinstance(default, dict):
            again = in_child(lambda: timed(default_kernel, operands), 3 * default["seconds"] + 5)
            if isinstance(again, dict) and again["seconds"] < default["seconds"]:
                default = again
        for entry in again_too:
            kernel, ready = runs[id(entry[0])]
            again = in_child(lambda: timed(kernel, ready), 3 * entry[1]["seconds"] + 5)
            if isinstance(again, dict) and again["seconds"] < entry[1]["seconds"]:
                entry[1] = {**entry[1], **again}  # checked already: the same kernel on the same operands
    return default


def nnz_of(operands):
    return sum(t.nnz for t in operands.values() if not t.format.is_dense)


def fmt_seconds(outcome):
    if isinstance(outcome, dict):
        return f"{outcome['seconds']:.4g}"
    return f"> {ARGS.timeout:g}" if outcome == "timeout" else "fail"


def report(name, label, operands, result, rows, failures):
    default, chosen, select_seconds, timings, hashes = result
    chosen_outcome, chosen_transposes = next((o, t) for c, o, t in timings if c is chosen)
    timed_ok = [(c, o) for c, o, _ in timings if isinstance(o, dict)]
    fastest = min((o["seconds"] for _, o in timed_ok), default=None)
    fastest_candidate = next((c for c, o in timed_ok if o["seconds"] == fastest), None)
    fastest_cin = str(fastest_candidate.cin) if fastest_candidate else "—"
    cut = sum(1 for _, o, _ in timings if o == "timeout")
    failures += [(name, label, str(c.cin), o) for c, o, _ in timings
                 if isinstance(o, str) and o != "timeout" and not over_memory(o)]
    refused = sum(1 for _, o, _ in timings if over_memory(o))
    within = isinstance(chosen_outcome, dict) and fastest is not None and chosen_outcome["seconds"] <= 1.25 * fastest
    if isinstance(default, dict) and isinstance(chosen_outcome, dict):
        speedup = f"{default['seconds'] / chosen_outcome['seconds']:.3g}×"
        overall = f"{default['seconds'] / (chosen_outcome['seconds'] + chosen_transposes):.3g}×"
    elif default == "timeout" and isinstance(chosen_outcome, dict):
        speedup = f"> {ARGS.timeout / chosen_outcome['seconds']:.3g}×"
        overall = f"> {ARGS.timeout / (chosen_outcome['seconds'] + chosen_transposes):.3g}×"
    else:
        speedup = overall = "—"
    ratio = f"{chosen_outcome['seconds'] / fastest:.2f}" if isinstance(chosen_outcome, dict) and fastest else "—"
    totals = [o["seconds"] + t for _, o, t in timings if isinstance(o, dict)]
    total_ratio = (f"{(chosen_outcome['seconds'] + chosen_transposes) / min(totals):.2f}"
                   if isinstance(chosen_outcome, dict) and totals else "—")
    rows.append((name, label, within, fastest_cin))
    for contender, outcome, extra in (("default schedule", default, {"source": hashes["default schedule"]}),
                                      ("selected", chosen_outcome, {"transposes": chosen_transposes,
                                                                    "cin": str(chosen.cin),
                                                                    "source": hashes.get(id(chosen))}),
                                      ("fastest candidate", {"seconds": fastest} if fastest else "failed",
                                       {"cin": fastest_cin, "source": hashes.get(id(fastest_candidate))})):
        ARGS.records.timing(name, label, contender, outcome["seconds"] if isinstance(outcome, dict) else None,
                            role="ours" if contender == "selected" else "variant", nnz=nnz_of(operands),
                            status="" if isinstance(outcome, dict) else outcome,
                            **({"limit": ARGS.timeout} if outcome == "timeout" else {}), **extra)
    print(f"| {name} | {label} | {nnz_of(operands):,} | {fmt_seconds(default)} | {fmt_seconds(chosen_outcome)} | "
          f"{chosen_transposes:.3g} | {speedup} | {overall} | {fastest if fastest is None else f'{fastest:.4g}'} | "
          f"{ratio}{'' if within else ' ✗'} | {total_ratio} | {len(timed_ok)} + {cut} cut"
          f"{f' + {refused} over memory' if refused else ''} | {select_seconds * 1e3:.0f} | "
          f"`{chosen.cin}` |", flush=True)
    return isinstance(default, dict) and default["seconds"]


def over_memory(outcome) -> bool:
    """A candidate that refuses these operands for the memory its dense workspaces would take: a verdict
    on the candidate (the issue's SDDMM case, SpGEMMH's 3-D workspaces), not a failure of the suite."""
    return isinstance(outcome, str) and outcome.startswith("failed: MemoryLimitError")


def measure_kernel(name, args):
    """Every input's row of kernel `name`, printed as it is measured; the rows' verdicts and the failed
    candidates returned."""
    rows, failures = [], []
    expression, formats = KERNELS[name]
    front = asp.autoschedule(expression, formats=formats, time_limit=args.search_limit)
    rng = np.random.default_rng(0)
    n = args.start
    while n <= args.max_n:
        operands = uniform_inputs(name, rng, n)
        if nnz_of(operands) > args.max_nnz:
            break
        seconds = report(name, f"uniform n={n}", operands, measure_input(name, front, operands, args),
                         rows, failures)
        if not seconds or seconds > 1.0:
            break
        n *= 2
    for scale in args.scales:
        operands = power_law_inputs(name, rng, scale)
        report(name, f"power-law n=2^{scale}", operands, measure_input(name, front, operands, args), rows,
               failures)
    if not args.no_real:
        for dataset in (REAL_TENSORS if name == "SpMTTKRP" else args.matrices):
            operands = real_inputs(name, rng, dataset, args.rank)
            if operands is not None:
                report(name, dataset, operands, measure_input(name, front, operands, args), rows, failures)
    return rows, failures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--start", type=int, default=256, help="first n of the uniform inputs")
    parser.add_argument("--max-n", type=int, default=1 << 17)
    parser.add_argument("--max-nnz", type=float, default=5e7, help="stop doubling past this many nonzeros")
    parser.add_argument("--scales", type=int, nargs="*", default=[12, 14], help="R-MAT scales")
    parser.add_argument("--no-real", action="store_true", help="skip the shipped real data")
    parser.add_argument("--matrices", nargs="*", default=list(REAL_MATRICES), help="real matrices to use")
    parser.add_argument("--rank", type=int, default=1000, help="rows of SpMTTKRP's factor matrices on real data")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before the default is cut off")
    parser.add_argument("--search-limit", type=float, default=120.0,
                        help="seconds of autoscheduling (SpMTTKRP's full search is anytime)")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=1,
                        help="worker processes measuring kernels side by side")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: SpMV, SpMV2 and SpGEMM, n up to 1,024, R-MAT 2^10, no real data, 5 s limits")
    add_option(parser)
    global ARGS
    ARGS = args = parser.parse_args(argv)
    quick_sizes(parser, args, kernel=["SpMV", "SpMV2", "SpGEMM"], max_n=1024, scales=[10], no_real=True, timeout=5.0,
                search_limit=5.0)
    args.records = Records(args.json)  # forked workers append to the same file
    print("| kernel | input | nnz | default s | selected s | its transposes s | speedup | with transposes | "
          "fastest candidate s | selected / fastest | the same, transposes included | candidates timed | select ms | "
          "selected CIN |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)  # before workers fork
    rows, failures = [], []
    kernels = sorted(args.kernel, key=SLOWEST_FIRST.index)
    workers = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    with workers or nullcontext():
        for found_rows, found_failures in (workers.map if workers else map)(measure_kernel, kernels, repeat(args)):
            rows += found_rows
            failures += found_failures
    within = sum(ok for _, _, ok, _ in rows)
    print(f"\nselect within 1.25× of the fastest frontier candidate on {within} of {len(rows)} inputs "
          f"({100 * within / max(len(rows), 1):.0f} %); not within: "
          + (", ".join(f"{k} {label}" for k, label, ok, _ in rows if not ok) or "none"))
    for kernel, label, ok, cin in rows:
        if not ok:
            print(f"  {kernel} {label}: the fastest was `{cin}`")
    for kernel, label, cin, outcome in failures:
        print(f"FAILED {kernel} {label}: {cin}: {outcome}")


ARGS = None

if __name__ == "__main__":
    main()
