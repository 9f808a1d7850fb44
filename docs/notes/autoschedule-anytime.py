"""Measures docs/notes/autoschedule-anytime.md: how good a cut-short asymptotic search's front is, by
programs costed rather than seconds (a shared machine cannot disturb a count).

    PYTHONPATH=src:bench python docs/notes/autoschedule-anytime.py SA8 SA2 TTMc SA3 [--whole] [--seconds]

Per kernel, on the autotune suite's first input (--max-nnz 2e4, rank 16): the joint best estimate
(select's ranking of the asymptotic front cut after N programs, SparseAuto's whole final set and the
default) after 50/200/1,000 programs; with --whole the whole search's best and the index of its
program among the programs costed; with --seconds the same at real limits of 0.5 s and 1 s
(`model="auto"`, as `schedule="auto"` searches). The cut: the search's clock (pipeline's `time`) is
replaced by one that stands still until the N-th program, so naming and costing take what they take.
"""
import argparse
import time
import types

import numpy as np

import autosparse as asp
from autosparse.autoschedule import select
from autosparse.autoschedule.asymptotic import pipeline
from autosparse_bench.autotune import CASES, inputs

CUTS = (50, 200, 1000)


def cut_after(programs: int, case):
    """The asymptotic front of a search that stops after `programs` programs, and its fixed seconds."""
    seen = {"programs": 0, "first": None}
    began = time.perf_counter()

    def report(done, total):
        seen["programs"] = done
        if seen["first"] is None:
            seen["first"] = time.perf_counter() - began

    clock = types.SimpleNamespace(perf_counter=lambda: float("inf") if seen["programs"] >= programs else 0.0)
    pipeline.time, real = clock, pipeline.time
    try:
        front = asp.autoschedule(case.expression, formats=case.formats, model="asymptotic", time_limit=1.0,
                                 progress=report)
    finally:
        pipeline.time = real
    return front, seen["first"]


def best(front, operands) -> float:
    return select.ranking(front, operands)[0][0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kernels", nargs="+")
    parser.add_argument("--whole", action="store_true")
    parser.add_argument("--whole-limit", type=float, help="seconds (SA8's whole search takes hours)")
    parser.add_argument("--seconds", action="store_true")
    options = parser.parse_args()
    args = argparse.Namespace(max_nnz=2e4, rank=16, mode_rank=16, no_real=True, matrices=[], tensors=[])
    for name in options.kernels:
        case = CASES[name]
        label, operands = next(inputs(name, case, np.random.default_rng(0), args))
        sparseauto = best(asp.autoschedule(case.expression, formats=case.formats, model="sparseauto"), operands) \
            if name.startswith(("SA", "TT")) else float("inf")
        row = [f"{name} ({label}) SparseAuto+default {sparseauto:.3g}"]
        for n in CUTS:
            front, first = cut_after(n, case)
            row.append(f"{n}: {min(best(front, operands), sparseauto):.3g} (first program at {first:.2f} s)")
        if options.seconds:
            for limit in (0.5, 1.0):
                row.append(f"{limit} s: {best(asp.autoschedule(case.expression, formats=case.formats, model='auto', time_limit=limit), operands):.3g}")
        if options.whole:
            began = time.perf_counter()
            whole = asp.autoschedule(case.expression, formats=case.formats, model="asymptotic",
                                   time_limit=options.whole_limit)
            seconds = time.perf_counter() - began
            ranked = [c for _, c in select.ranking(whole, operands) if c.found_by == "asymptotic"]
            order = list(whole.search.costs)
            estimate = dict((id(c), w) for w, c in select.ranking(whole, operands))
            pick = ranked[0]
            row.append(f"{'whole' if whole.complete else 'cut'} ({seconds:.0f} s, {whole.search.processed} programs): "
                       f"{min(best(whole, operands), sparseauto):.3g}, its program costed "
                       f"{order.index(pick.sketch) + 1}th: {pick.sketch}  est {estimate[id(pick)]:.3g}")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
