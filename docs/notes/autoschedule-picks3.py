"""Which cost term is missing where a pick misses: one kernel and input of the autotune suite, its joint
front ranked by `select.ranking` and timed, estimate beside time per candidate.

    PYTHONPATH=src:bench python docs/notes/autoschedule-picks3.py TTMc --input 0 --max-nnz 2e4
    PYTHONPATH=src:bench python docs/notes/autoschedule-picks3.py SpGEMM --input 1 --top 10 --sample 10

Timed: the tied set (`tiebreak.tied`), the --top best by estimate and a stratified sample of the rest
(--sample, equal rank bands), each compiled with `front.kernel(cand)` on operands already converted to
the candidate's formats (as the autotune suite times them; the conversion's own seconds are shown
apart) in a forked child with a time limit, --rounds times in turn (the least kept). With --json the
rows are written out too, to compare two versions of the cost model by CIN. The summary line gives
what picks3 tracks: the first tied candidate's time over the fastest timed, and whether the fastest is
in the tied set.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import autosparse as asp
from autosparse.autoschedule import select, tiebreak
from autosparse_bench.asymptotic_select import compiled_for, in_child, reformatted, timed
from autosparse_bench.autotune import CASES, inputs


def operands_of(name, number, args):
    """The `number`th input of the autotune suite for kernel `name`."""
    options = argparse.Namespace(max_nnz=args.max_nnz, rank=args.rank, mode_rank=args.mode_rank,
                                 no_real=False, matrices=["CollegeMsg", "4elt"], tensors=["CollegeMsg", "yelp"])
    for n, (label, operands) in enumerate(inputs(name, CASES[name], np.random.default_rng(0), options)):
        if n == number:
            return label, operands
    sys.exit(f"{name} has no input {number}")


def chosen_for_timing(ranked, tied, top, sample):
    """Indices into `ranked`: the tied ones, the `top` best, one from each of `sample` rank bands."""
    keep = {n for n, (_, cand) in enumerate(ranked) if any(cand is t for t in tied)}
    keep |= set(range(min(top, len(ranked))))
    rest = [n for n in range(len(ranked)) if n not in keep]
    for band in np.array_split(np.asarray(rest, dtype=int), min(sample, len(rest))) if rest and sample else []:
        keep.add(int(band[0]))
    return sorted(keep)


def runner(front, cand, operands, conversions):
    """(the kernel of `cand` compiled and its operands converted, conversion seconds), or (a reason, 0)."""
    ready, converting = reformatted(operands, cand.formats, conversions)
    try:
        return (compiled_for(front.kernel(cand, num_threads=1), ready), ready), converting
    except asp.AutosparseError as error:
        return f"refused: {error}"[:60], converting


def seconds_of(run, limit):
    """The median seconds of a call of `run` (kernel, operands) in a forked child, or why there are none."""
    if isinstance(run, str):
        return run
    kernel, ready = run
    outcome = in_child(lambda: timed(kernel, ready, limit), 4 * limit + 5)
    if not isinstance(outcome, dict) or outcome.get("cut"):
        return "timeout" if not isinstance(outcome, str) or outcome == "timeout" else outcome[:60]
    return outcome["seconds"]


def best_of(rounds, runs, limit):
    """Per run, the least of `rounds` medians, the runs taken in turn each round: on a machine others
    load, the least is the time least disturbed, and taking turns spreads a busy spell over all."""
    found = [None] * len(runs)
    for _ in range(rounds):
        for n, run in enumerate(runs):
            seconds = seconds_of(run, limit)
            if not isinstance(seconds, float) or found[n] is None or isinstance(found[n], str):
                found[n] = seconds if found[n] is None or isinstance(seconds, float) else found[n]
            else:
                found[n] = min(found[n], seconds)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel", choices=list(CASES))
    parser.add_argument("--input", type=int, default=0, help="which input of the suite (0: the first generated)")
    parser.add_argument("--max-nnz", type=float, default=2e4)
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument("--mode-rank", type=int, default=16)
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds of the asymptotic search")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sample", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3, help="times each candidate is timed (the least kept)")
    parser.add_argument("--limit", type=float, default=1.0, help="seconds a candidate's call may take")
    parser.add_argument("--cin", type=int, default=110, help="characters of each CIN shown (0: all)")
    parser.add_argument("--json", help="also write the rows here (rank, tied, estimate, seconds, CIN)")
    args = parser.parse_args()

    case = CASES[args.kernel]
    label, operands = operands_of(args.kernel, args.input, args)
    front = asp.autoschedule(case.expression, formats=case.formats, model="auto", time_limit=args.time_limit)
    ranked = select.ranking(front, operands)
    tied = tiebreak.tied(ranked)
    print(f"{args.kernel} on {label}: {len(ranked)} contenders, {len(tied)} tied "
          f"(within {tiebreak.NEAR:.0%} of {ranked[0][0]:.4g})")
    chosen, conversions = chosen_for_timing(ranked, tied, args.top, args.sample), {}
    runs = [runner(front, ranked[n][1], operands, conversions) for n in chosen]
    times = best_of(args.rounds, [run for run, _ in runs], args.limit)
    rows = [(n, *ranked[n], seconds, converting, any(ranked[n][1] is t for t in tied))
            for n, seconds, (_, converting) in zip(chosen, times, runs)]
    times = [s for *_, s, _, _ in rows if isinstance(s, float)]
    fastest = min(times) if times else None
    for n, work, cand, seconds, converting, is_tied in rows:
        shown = f"{seconds * 1e3:9.3f} ms" if isinstance(seconds, float) else f"{seconds:>12}"
        ratio = f"{seconds / fastest:6.2f}x" if isinstance(seconds, float) and fastest else "     -"
        text = str(cand.cin) if not args.cin else str(cand.cin)[:args.cin]
        print(f"{n:5d} {'T' if is_tied else ' '} {cand.found_by[:4]:4} est {work:11.4g} {shown} {ratio}"
              f" conv {converting * 1e3:7.2f} ms  {text}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"kernel": args.kernel, "input": label, "rows": [
                {"rank": n, "tied": is_tied, "estimate": work, "seconds": seconds, "model": cand.found_by,
                 "cin": str(cand.cin)} for n, work, cand, seconds, _, is_tied in rows]}, out, indent=0)
    first = next((s for *_, s, _, t in rows if t), None)
    best_row = min((r for r in rows if isinstance(r[3], float)), key=lambda r: r[3], default=None)
    if isinstance(first, float) and best_row:
        print(f"first tied / fastest: {first / fastest:.2f}; fastest in the tied set: {best_row[5]} "
              f"(rank {best_row[0]})")


if __name__ == "__main__":
    main()
