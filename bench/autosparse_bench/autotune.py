"""Issue 29's evaluation: is every autoscheduled pick as good as the best, and is autoscheduling fast?
Every frontier candidate (or a stratified sample past --max-candidates) timed on generated and shipped
real data, beside the default schedule, `select`'s pick and `schedule="auto"` end to end.

    autosparse bench autotune                              # every kernel, generated + real inputs
    autosparse bench autotune --kernel SpMV2 SA4 --max-nnz 2e4 --no-real
    autosparse bench autotune --quick                      # the CI size

Kernels: Ahrens et al.'s SpMV2, SpGEMM in the paper's form (B(i,k) C(j,k)) and in the usual one
(B(i,k) C(k,j)) and SpGEMMH, with SDDMM, MTTKRP of a 3- and a 4-tensor and a chain of four sparse
matrices; Dias et al.'s kernels 1-8 as SA1-SA8, kernel 5 named TTMc. Each is measured on what
`schedule="auto"` weighs: the joint front (the asymptotic frontier, searched for at most
--search-limit seconds, SparseAuto's final set where the expression is a product) and the default
schedule.

Inputs: where B is the only sparse operand, B is drawn uniformly and with power-law modes
(data.uniform_tensor / powerlaw_tensor, about --max-nnz entries at 1% density; R-MAT for matrices) or
read from ../shared/data (--matrices, --tensors), and every other index ranges over --rank
(--mode-rank for 3- and 4-tensor kernels); where several operands are sparse, all are square n × n
matrices (uniform and R-MAT with 8 entries a row, n = --max-nnz / 8; the chain 2 a row, since its
products fill in) or the one shipped matrix (the chain: 4elt, a mesh whose powers stay sparse). The
4-D MTTKRP has no shipped tensor. An empty frontier gives rows that miss every target.

Per (kernel, input), with asymptotic_select's machinery (a forked child per candidate with a time
limit, every result checked against the default's, the default, the pick and the fastest re-timed in
alternating rounds; a candidate's time is its run and the per-call reformatting of operands it reads in
other formats, as the caller passing them as they are pays; the pick is the contender of select's tie
that these times find fastest, as the
trial of `schedule="auto"`'s calls would, and select's time is the estimate and the tie, what the
first call decides before running): candidates timed of the front's, the pick over the fastest, the
default (schedule=None) over the pick, `schedule="auto"`'s first call (search, select, compile and run
in a fresh child) and its warm calls over the default's, both through `evaluate`, and select's own
time, in ms and as a fraction of one call of the pick; and the search time of the kernel's frontier
(also one `count` record per kernel, which the report shows). A candidate that refuses the operands
for its dense workspaces' memory is counted apart; one that fails otherwise, or disagrees, makes the
exit status 1. The summary checks issue 29's targets: the pick within 1.25× of the fastest on >= 90%
of pairs, never more than 10% slower than the default, select <= 50 ms or <= 1% of a call, search
<= 60 s and the first auto call <= 1 s.

Sampling past --max-candidates: the tie's contenders and the --best-few best estimated always, then one candidate
from each of the remaining rank bands (equal slices of the estimate order), the one whose structure
(operands transposed, temporaries, outer loop order) the sample holds least so far.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import repeat

import numpy as np

import autosparse as asp
from autosparse.api.auto import pending_trials
from autosparse.notation import accesses, parse

from . import data, quick_sizes
from .asymptotic_counts import KERNELS as PIGEON
from .asymptotic_select import DATA, agrees, in_child, measure_front, nnz_of, over_memory, timed
from .records import Records, add_option
from .sparseauto_counts import KERNELS as SPARSEAUTO


@dataclass(frozen=True)
class Case:
    expression: str
    formats: dict
    per_row: int = 8  # entries a row of the generated square matrices

    @property
    def sparse(self) -> list[str]:
        return [a.tensor for a in accesses(parse(self.expression).rhs) if a.tensor in self.formats
                and not set(str(self.formats[a.tensor])) <= {"d"}]


CASES = {
    "SpMV2": Case(*PIGEON["SpMV2"]),
    "SpGEMM": Case(*PIGEON["SpGEMM"]),
    "SpGEMM-kj": Case("A(i,j) = B(i,k) * C(k,j)", {"B": "ds", "C": "ds", "A": "ds"}),
    "SpGEMMH": Case(*PIGEON["SpGEMMH"]),
    "SDDMM": Case("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "ds", "A": "ds"}),
    "MTTKRP": Case("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "dss"}),
    "MTTKRP-4D": Case("A(i,j) = B(i,k,l,m) * C(k,j) * D(l,j) * E(m,j)", {"B": "dsss"}),
    "chain": Case("A(i,m) = B(i,j) * C(j,k) * D(k,l) * E(l,m)",
                  {"B": "ds", "C": "ds", "D": "ds", "E": "ds", "A": "ds"}, per_row=2),
    **{"TTMc" if n == 5 else f"SA{n}": Case(expression, formats) for n, (expression, formats) in SPARSEAUTO.items()},
}
REAL_MATRICES = ("CollegeMsg", "4elt")
REAL_TENSORS = ("CollegeMsg", "yelp")
COLUMNS = ("kernel", "input", "nnz", "candidates timed / frontier", "search s", "default s", "pick s", "fastest s",
           "pick / fastest", "default / pick", "auto first call s", "auto / default, through evaluate",
           "select ms", "select / call", "pick")
CHAIN_MATRICES = ("4elt",)
SETTLE_CALLS = 40  # calls after the first that a tie's trial may take before the warm calls are timed  # a mesh: its powers stay local, where a graph's fill the whole matrix


# --- inputs ----------------------------------------------------------------------------------------------


def inputs(name, case, rng, args):
    """(label, operands) for every input of `name`: generated ones, then the shipped ones."""
    if case.sparse == ["B"]:
        order = len(next(a for a in accesses(parse(case.expression).rhs) if a.tensor == "B").indices)
        rank = args.rank if order == 2 else args.mode_rank
        for label, b in generated_b(order, args.max_nnz):
            yield label, around_b(case, rng, b, rank)
        for dataset in [] if args.no_real or order > 3 else args.matrices if order == 2 else args.tensors:
            tensor = asp.read(DATA / f"{dataset}.{'mtx' if order == 2 else 'tns'}.gz")
            coords, values = tensor.to_coo()
            yield dataset, around_b(case, rng, (np.asarray(coords), np.asarray(values), tensor.shape), rank)
        return
    n = max(16, int(args.max_nnz / case.per_row))
    yield f"uniform n={n}", square(case, rng, lambda seed: data.uniform(n, n, case.per_row * n, seed=seed))
    scale = max(4, int(np.log2(n)))
    yield f"R-MAT 2^{scale}", square(case, rng, lambda seed: data.rmat(scale, case.per_row, seed=seed))
    for dataset in [] if args.no_real else CHAIN_MATRICES if name == "chain" else args.matrices:
        matrix = data.load_matrix(DATA / f"{dataset}.mtx.gz")
        yield dataset, square(case, rng, lambda seed: matrix)


def generated_b(order, max_nnz):
    """(label, (coords, values, shape)) of B drawn uniformly and with power-law modes: about `max_nnz`
    entries at 1% density (an R-MAT graph for a matrix)."""
    nnz = int(max_nnz)
    side = max(4, round((100 * nnz) ** (1 / order)))
    shape = (side,) * order
    uniform = data.generate("uniform_tensor", shape, min(nnz, side ** order))
    yield f"uniform {'×'.join(map(str, shape))}", (uniform.coords, uniform.vals, shape)
    if order == 2:
        scale = max(4, int(np.log2(max(nnz // 16, 16))))
        matrix = data.generate("rmat", scale).tocoo()
        yield f"R-MAT 2^{scale}", (np.stack([matrix.row, matrix.col]).astype(np.int64), matrix.data, matrix.shape)
        return
    skewed = data.generate("powerlaw_tensor", shape, nnz)
    yield f"power-law {'×'.join(map(str, shape))}", (skewed.coords, skewed.vals, shape)


def around_b(case, rng, b, rank):
    """The case's operands around the sparse B: dense factors random, every index not of B over `rank`."""
    coords, values, shape = b
    b_access = next(a for a in accesses(parse(case.expression).rhs) if a.tensor == "B")
    extents = {i.name: n for i, n in zip(b_access.indices, shape)}
    found = {"B": asp.Tensor.from_coo(coords, values, tuple(shape), format=case.formats["B"])}
    for access in accesses(parse(case.expression).rhs):
        if access.tensor != "B":
            shape = tuple(extents.setdefault(i.name, rank) for i in access.indices)
            found[access.tensor] = asp.Tensor.from_numpy(rng.random(shape))
    return found


def square(case, rng, matrix_for):
    """Operands of a kernel over square matrices: each sparse one `matrix_for(seed)` (scipy CSR), dense
    ones random of the same side."""
    found = {}
    for seed, access in enumerate(accesses(parse(case.expression).rhs)):
        if access.tensor in case.sparse:
            matrix = matrix_for(seed)
            found[access.tensor] = asp.Tensor.from_scipy(matrix, format=case.formats[access.tensor])
            side = matrix.shape[0]
    for access in accesses(parse(case.expression).rhs):
        if access.tensor not in found:
            found[access.tensor] = asp.Tensor.from_numpy(rng.random((side,) * len(access.indices)))
    return found


# --- sampling --------------------------------------------------------------------------------------------


def structure(cand) -> tuple:
    """What makes two candidates differ in kind: operands reformatted, temporaries, outer loop order."""
    loops = tuple(re.findall(r"∀(\w+)", re.match(r"(?:∀\w+\s*)*", str(cand.cin)).group(0)))
    return tuple(sorted(cand.transposes)), len(cand.temporaries), loops


def stratified(front, budget, best_few):
    """A `sample(order, kept)` for measure_front: all of `order` (by estimate, the tie's first first) up
    to `budget`; past it the indices `kept` (the tie's contenders), the first and the `best_few` best
    estimated, then one of each remaining rank band, the structure least held so far first, up to
    `budget` in all (or the contenders alone, where they are more)."""
    def sample(order, kept=()):
        if len(order) <= budget:
            return order
        kept = list(dict.fromkeys([*kept, *order[:1 + best_few]]))
        held = {}
        for n in kept:
            held[structure(front[n])] = held.get(structure(front[n]), 0) + 1
        rest = [n for n in order if n not in kept]
        for band in np.array_split(np.asarray(rest), budget - len(kept)) if budget > len(kept) else ():
            if len(band):
                n = int(min(band, key=lambda m: held.get(structure(front[int(m)]), 0)))
                kept.append(n)
                held[structure(front[n])] = held.get(structure(front[n]), 0) + 1
        return kept

    return sample


# --- one kernel ------------------------------------------------------------------------------------------


def frontier(case, args):
    """The candidates `schedule="auto"` weighs for the case (both models' where both apply: the joint
    front, the default schedule competing in `select`) and the seconds the search took."""
    start = time.perf_counter()
    found = asp.autoschedule(case.expression, formats=case.formats, model="auto", time_limit=args.search_limit)
    return found, time.perf_counter() - start


def auto_end_to_end(case, operands, timeout):
    """`schedule="auto"` as a user meets it, in a fresh child (the process's memory of fronts and choices
    empty; compiled kernels may be on disk already): the first call's seconds; the calls that decide a
    tie (`tiebreak.Trial`: each contender compiled and timed on calls of its own), their number and
    seconds; then `timed`'s outcome of the calls after them, and (as "default") the warm calls of
    `evaluate` with the default schedule: both pay evaluate's per-call work (parsing, formats, the
    remembered choice), which a µs kernel does not hide, so auto is judged against the default on equal
    terms."""
    result_format = case.formats.get(parse(case.expression).lhs.tensor)

    def through_evaluate(schedule):
        return lambda **named: asp.evaluate(case.expression, format=result_format, schedule=schedule,
                                            operands=named)

    def work():
        start = time.perf_counter()
        through_evaluate("auto")(**operands)
        first = time.perf_counter() - start
        calls, start = 0, time.perf_counter()
        while pending_trials() and calls < SETTLE_CALLS:
            through_evaluate("auto")(**operands)
            calls += 1
        settled = time.perf_counter() - start
        return {"first": first, "settle_calls": calls, "settle_seconds": settled,
                **timed(through_evaluate("auto"), operands), "default": timed(through_evaluate(None), operands)["seconds"]}

    return in_child(work, 2 * timeout + 60 + SETTLE_CALLS * timeout)


@dataclass
class Row:
    kernel: str
    dataset: str
    pick_over_best: float | None
    default_over_pick: float | None
    select_ms: float
    select_share: float | None
    auto_first: float | None
    settle: tuple[int, float] | None  # calls after the first that decided the tie, and their seconds
    auto_over_default: float | None
    failed: int  # candidates (and the auto call) whose result differed or that raised


@dataclass
class Searched:
    kernel: str
    seconds: float
    candidates: int
    complete: bool


def measure_kernel(name, args) -> tuple[Searched, list[Row]]:
    """Kernel `name`'s search and its rows, printed as they are measured."""
    case = CASES[name]
    found, search_seconds = frontier(case, args)
    args.records.add("count", kernel=name, mode="auto", stage="frontier", count=len(found),
                     seconds=search_seconds, complete=found.complete)
    rows = []
    rng = np.random.default_rng(sum(map(ord, name)))
    for label, operands in inputs(name, case, rng, args):
        if not len(found):  # select has nothing to choose from: every input misses the targets
            rows.append(Row(name, label, None, None, 0.0, None, None, None, None, 0))
            print(f"| {name} | {label} | {nnz_of(operands):,} | 0 / 0: the frontier is empty | {search_seconds:.1f} |"
                  + " — |" * (len(COLUMNS) - 5), flush=True)
            continue
        result = measure_front(case.expression, case.formats, found, operands, args.timeout,
                               stratified(found, args.max_candidates, args.best_few))
        auto = auto_end_to_end(case, operands, args.timeout)
        rows.append(report(name, label, found, search_seconds, operands, result, auto, args))
    return Searched(name, search_seconds, len(found), found.complete), rows


def paid(outcome, transposes):
    """What a call of a timed candidate costs a caller who passes the operands as they are: its run and
    the per-call reformatting of the operands it reads in other formats (as its Kernel does)."""
    return None if not isinstance(outcome, dict) else outcome["seconds"] + transposes


def seconds_of(outcome):
    return outcome["seconds"] if isinstance(outcome, dict) else None


def report(name, label, found, search_seconds, operands, result, auto, args) -> Row:
    """The row of one (kernel, input), printed and recorded."""
    default, chosen, select_seconds, timings, _ = result
    pick = next(paid(o, t) for c, o, t in timings if c is chosen)
    timed_ok = [(c, o) for c, o, _ in timings if isinstance(o, dict)]
    best_cand, best = min(((c, paid(o, t)) for c, o, t in timings if isinstance(o, dict)), key=lambda ct: ct[1],
                          default=(None, None))
    default_seconds = seconds_of(default)
    if isinstance(auto, dict) and isinstance(default, dict) and not agrees(auto, default):
        auto = "failed: its result differs from the default's"
    auto_seconds = seconds_of(auto)
    for cand, outcome, transposes in timings:
        args.records.add("candidate", kernel=name, dataset=label, cin=str(cand.cin), seconds=seconds_of(outcome),
                         status="" if isinstance(outcome, dict) else outcome, transposes=transposes,
                         checked=isinstance(outcome, dict) and outcome.get("checked against"),
                         selected=cand is chosen)
    nnz = nnz_of(operands)
    for contender, seconds, outcome, extra in (
            ("selected", pick, None, {"cin": str(chosen.cin)}),
            ("default schedule", default_seconds, default, {"limit": args.timeout}),
            ("fastest candidate", best, None, {"cin": str(best_cand.cin) if best_cand else ""}),
            ('schedule="auto" (evaluate)', auto_seconds, auto,
             {"first_call": auto["first"] if isinstance(auto, dict) else None,
              "settle_calls": auto["settle_calls"] if isinstance(auto, dict) else None,
              "settle_seconds": auto["settle_seconds"] if isinstance(auto, dict) else None,
              "evaluate_default": auto["default"] if isinstance(auto, dict) else None})):
        status = "" if seconds is not None else outcome if isinstance(outcome, str) else "failed"
        args.records.timing(name, label, contender, seconds, role="ours" if contender == "selected" else "variant",
                            status=status, nnz=nnz, **extra)
    cut = sum(1 for _, o, _ in timings if o == "timeout")
    refused = sum(1 for _, o, _ in timings if over_memory(o))
    failed = [o for _, o, _ in timings if isinstance(o, str) and o != "timeout" and not over_memory(o)]
    auto_failed = isinstance(auto, str) and auto != "timeout" and not over_memory(auto)
    row = Row(name, label, ratio(pick, best), ratio(default_seconds, pick), 1e3 * select_seconds,
              ratio(select_seconds, pick), auto["first"] if isinstance(auto, dict) else None,
              (auto["settle_calls"], auto["settle_seconds"]) if isinstance(auto, dict) else None,
              ratio(auto_seconds, auto["default"] if isinstance(auto, dict) else None),
              len(failed) + auto_failed)
    counted = (f"{len(timed_ok)} (+{cut} cut" + (f", {refused} over memory" if refused else "")
               + (f", {len(failed)} FAILED" if failed else "") + f") / {len(found)}")
    cells = (name, label, f"{nnz:,}", counted, f"{search_seconds:.1f}" + ("" if found.complete else " (partial)"),
             shown(default, args.timeout), shown(pick), shown(best),
             fmt_ratio(row.pick_over_best) + ("" if within(row) else " ✗"), fmt_ratio(row.default_over_pick),
             shown(row.auto_first), fmt_ratio(row.auto_over_default), f"{row.select_ms:.1f}",
             fmt_ratio(row.select_share), f"`{chosen.cin}`")
    print("| " + " | ".join(cells) + " |", flush=True)
    for outcome in failed:
        print(f"FAILED {name} {label}: {outcome}", flush=True)
    if auto_failed:
        print(f"FAILED {name} {label}: schedule=\"auto\": {auto}", flush=True)
    return row


def ratio(a, b):
    return a / b if a is not None and b else None


def within(row):
    return row.pick_over_best is not None and row.pick_over_best <= 1.25


def shown(value, timeout=None):
    if isinstance(value, dict):
        value = value["seconds"]
    if value is None or isinstance(value, str):
        return f"> {timeout:g}" if timeout and value == "timeout" else "fail" if value else "—"
    return f"{value:.4g}"


def fmt_ratio(value):
    return "—" if value is None else f"{value:.2f}"


# --- the summary -----------------------------------------------------------------------------------------

def summary(rows: list[Row], searches: list[Searched]) -> None:
    """Issue 29's targets, each with the pairs or kernels that miss it."""
    near = [r for r in rows if within(r)]
    slower = [r for r in rows if r.default_over_pick is not None and r.default_over_pick < 1 / 1.1]
    slow_select = [r for r in rows if r.select_ms > 50 and (r.select_share is None or r.select_share > 0.01)]
    slow_auto = [r for r in rows if r.auto_first is None or r.auto_first > 1.0]
    print(f"\n- pick within 1.25× of the fastest candidate: {len(near)} of {len(rows)} pairs "
          f"({100 * len(near) / max(len(rows), 1):.0f} %, target >= 90 %); not: "
          + (", ".join(f"{r.kernel} {r.dataset} ({fmt_ratio(r.pick_over_best)})" for r in rows if r not in near)
             or "none"))
    print("- pick more than 10% slower than the default (target none): "
          + (", ".join(f"{r.kernel} {r.dataset} (default / pick {r.default_over_pick:.2f})" for r in slower)
             or "none"))
    worst = max(rows, key=lambda r: r.select_ms, default=None)
    print(f"- select: at most {worst.select_ms if worst else 0:.1f} ms"
          + (f" ({worst.kernel} {worst.dataset})" if worst else "")
          + "; over 50 ms and over 1% of a call (target none): "
          + (", ".join(f"{r.kernel} {r.dataset} ({r.select_ms:.0f} ms)" for r in slow_select) or "none"))
    print("- search seconds per kernel (target <= 60): "
          + ", ".join(f"{s.kernel} {s.seconds:.1f} ({s.candidates} candidates{'' if s.complete else ', partial'})"
                      for s in searches))
    auto_slower = [r for r in rows if r.auto_over_default is not None and r.auto_over_default > 1.1]
    print('- schedule="auto" more than 10% slower than the default, both through evaluate: '
          + (", ".join(f"{r.kernel} {r.dataset} ({r.auto_over_default:.2f})" for r in auto_slower) or "none"))
    settled = [r for r in rows if r.settle and r.settle[0]]
    print(f'- ties decided over the calls after the first: {len(settled)} of {len(rows)} pairs; '
          + (f"calls at most {max(r.settle[0] for r in settled)}, seconds at most "
             f"{max(r.settle[1] for r in settled):.2f} ({max(settled, key=lambda r: r.settle[1]).kernel})"
             if settled else "none"))
    print('- schedule="auto" first call over 1 s (target none): '
          + (", ".join(f"{r.kernel} {r.dataset} ({shown(r.auto_first)} s)" for r in slow_auto) or "none"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--max-nnz", type=float, default=1e5, help="entries of each generated sparse operand")
    parser.add_argument("--rank", type=int, default=32, help="dense modes of the matrix kernels")
    parser.add_argument("--mode-rank", type=int, default=16, help="dense modes of the tensor kernels")
    parser.add_argument("--no-real", action="store_true", help="skip the shipped real data")
    parser.add_argument("--matrices", nargs="*", default=list(REAL_MATRICES), help="shipped matrices to use")
    parser.add_argument("--tensors", nargs="*", default=list(REAL_TENSORS), help="shipped 3-tensors to use")
    parser.add_argument("--max-candidates", type=int, default=60, help="past this many, a stratified sample")
    parser.add_argument("--best-few", type=int, default=5, help="best estimated candidates always timed")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before the default is cut off")
    parser.add_argument("--search-limit", type=float, default=60.0, help="seconds of an anytime asymptotic search")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=1,
                        help="worker processes measuring kernels side by side")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: SpMV2, SDDMM and SA4, 2,000 entries, 6 candidates, no real data, 5 s limits")
    add_option(parser)
    args = parser.parse_args(argv)
    quick_sizes(parser, args, kernel=["SpMV2", "SDDMM", "SA4"], max_nnz=2e3, max_candidates=6, best_few=2,
                no_real=True, timeout=5.0, search_limit=5.0)
    args.records = Records(args.json)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS), flush=True)
    workers = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    with workers or nullcontext():
        measured = list((workers.map if workers else map)(measure_kernel, args.kernel, repeat(args)))
    rows = [row for _, found in measured for row in found]
    summary(rows, [searched for searched, _ in measured])
    if any(r.failed for r in rows):
        raise SystemExit(f"{sum(r.failed for r in rows)} results failed or differed from the default's (FAILED above)")


if __name__ == "__main__":
    main()
