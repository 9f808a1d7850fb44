"""Figure 6 of Ahrens et al. (PLDI 2022) reproduced: for each of the six kernels, written as in the
paper (SpGEMM is B_ik C_jk), the stage-by-stage counts and times of the asymptotic autoscheduler in full
and TACO mode, the frontier size beside the paper's, and how many frontier candidates compile and equal
numpy on random operands.

    autosparse bench asymptotic-counts [--kernel spmv spgemm ...] [--mode full taco] [--limit 600] [--no-check]
                                      [--frontier paper ours]

`--frontier paper` (the default) runs the paper's analysis (`paper=True`: Fig. 5's workspace states,
asymptotic cost the only criterion), which Figure 6's counts come from; `ours` runs autosparse's default
(workspaces scoped to their loop's iteration, hash-table levels a second criterion), whose frontier
sizes differ by design. Three of Figure 6's frontiers (SpMTTKRP and SpGEMM2 in TACO mode, SpGEMMH in
full) come from two behaviours of Pigeon.jl's analysis that the paper's does not have:
docs/notes/autoschedule-counts.md explains them and names the programs.

Inputs are stored as in the paper: matrices CSR ("ds"), the 3-tensor "dss", vectors dense. SpMTTKRP in
full mode is an anytime search: it stops taking programs after --limit seconds and reports the frontier of
those it took.
"""

from __future__ import annotations

import argparse
import time

import autosparse as asp
from autosparse.autoschedule.verify import verify
from autosparse_bench import quick_sizes
from autosparse_bench.records import Records, add_option

KERNELS = {
    "SpMV": ("a(i) = B(i,j) * c(j)", {"B": "ds"}),
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"}),
    "SpMTTKRP": ("A(i,j) = B(i,k,l) * C(j,k) * D(j,l)", {"B": "dss", "C": "ds", "D": "ds", "A": "ds"}),
    "SpGEMM": ("A(i,j) = B(i,k) * C(j,k)", {"B": "ds", "C": "ds", "A": "ds"}),
    "SpGEMM2": ("A(i,j) = B(i,k) * C(k,l) * D(j,l)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"}),
    "SpGEMMH": ("A(i,j) = B(i,k) * C(j,k) * D(j,k)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"}),
}
# (min-depth, undominated) per mode, as printed in the paper's Figure 6 (None: timed out).
PAPER = {
    "SpMV": {"full": (8, 4), "taco": (4, 4)}, "SpMV2": {"full": (144, 28), "taco": (24, 24)},
    "SpMTTKRP": {"full": (3631104, None), "taco": (384, 23)}, "SpGEMM": {"full": (96, 12), "taco": (16, 4)},
    "SpGEMM2": {"full": (20736, 292), "taco": (32, 4)}, "SpGEMMH": {"full": (102272, 204), "taco": (144, 4)},
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--mode", nargs="+", default=["taco", "full"], choices=["taco", "full"])
    parser.add_argument("--limit", type=float, default=600.0, help="seconds before an anytime search stops")
    parser.add_argument("--no-check", action="store_true", help="do not compile the frontier candidates")
    parser.add_argument("--stages", action="store_true", help="print every stage's count and time")
    parser.add_argument("--frontier", nargs="+", default=["paper"], choices=["paper", "ours"],
                        help="whose frontier: the paper's analysis or autosparse's default")
    parser.add_argument("--quick", action="store_true", help="CI size: SpMV, SpMV2 and SpGEMM, 10 s searches")
    add_option(parser)
    args = parser.parse_args(argv)
    quick_sizes(parser, args, kernel=["SpMV", "SpMV2", "SpGEMM"], limit=10.0)
    records = Records(args.json)
    print("| kernel | mode | frontier | min-depth: distinct / every copy (paper) | undominated: distinct / every copy "
          "(paper) | distinct costs | compiled = numpy | "
          "programs processed | search s | s per program |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.kernel:
        expression, formats = KERNELS[name]
        for mode, analysis in ((m, a) for m in args.mode for a in args.frontier):
            start = time.perf_counter()
            front = asp.autoschedule(expression, formats=formats, taco=mode == "taco", paper=analysis == "paper",
                                     time_limit=args.limit)
            seconds = time.perf_counter() - start
            search = front.search
            paper_total, paper_front = PAPER[name][mode]
            checked = "—" if args.no_check else f"{verify(front)[0]} / {len(front)}"
            costs = next(s.name for s in front.stages if s.name.startswith("7 asymptotic")).split("(")[1].split()[0]
            paper_count = next(s.count for s in front.stages if s.name.startswith("6 the same"))
            paper_frontier = next(s.count for s in front.stages if s.name.startswith("7 the same"))
            frontier = f"{len(front)}" + ("" if front.complete else " (partial)")
            print(f"| {name} | {mode} | {analysis} | {search.total:,} / {paper_count:,} ({paper_total:,}) | "
                  f"{frontier} / {paper_frontier} ({'timed out' if paper_front is None else paper_front}) | "
                  f"{costs} | {checked} | {search.processed:,} / {search.total:,} | {seconds:.1f} | "
                  f"{seconds / max(search.processed, 1):.5f} |", flush=True)
            for stage in front.stages:
                if args.stages:
                    print(f"|   | {stage.name} | {stage.count:,} | {stage.seconds:.3f} s |")
                paper = (paper_total if stage.name.startswith("6 the same") else
                         paper_front if stage.name.startswith("7 the same") else None)
                records.add("count", kernel=name, mode=f"{mode}, {analysis}'s analysis", stage=stage.name,
                            count=stage.count, seconds=stage.seconds, paper=paper,
                            complete=front.complete)

if __name__ == "__main__":
    main()
