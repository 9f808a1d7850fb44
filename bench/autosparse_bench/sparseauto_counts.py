"""Tables 3 and 4 of Dias et al. (SparseAuto, OOPSLA 2024) reproduced: for each of the eight kernels of
Table 2 (index typos fixed, see docs/notes/sparseauto-paper.md §6), the schedules left after each
compile-time stage with their distinct (time, memory) costs, and each stage's time, beside the paper's.

    autosparse bench sparseauto-counts [--kernel 1 5 ...] [--rule everywhere|literal] [--no-check]

B is stored with a dense first level ("ds", "dss"), as the paper's code treats it. Stage 3 assumes every
dimension in [16, 256] (the range of the paper's §5.3 example; the paper does not give the ranges
behind Table 3) and at least two nonzeros per stored row or fiber of B. `--check` (the default)
compiles every final schedule and compares it with numpy. `--rule literal` gives Table 3's stage-3
column for every kernel; the default rule keeps more for kernels 1, 2 and 5
(docs/notes/autoschedule-counts.md).
"""

from __future__ import annotations

import argparse
import time

import autosparse as asp
from autosparse.autoschedule.verify import verify
from autosparse_bench import quick_sizes
from autosparse_bench.records import Records, add_option

KERNELS = {
    1: ("A(i,l) = B(i,j) * C(i,k) * D(j,k) * E(j,l)", {"B": "ds"}),
    2: ("A(i,m) = B(i,j) * C(i,k) * D(j,k) * E(j,l) * F(l,m)", {"B": "ds"}),
    3: ("A(i,l) = B(i,j) * C(j,k) * D(j,k) * E(k,l)", {"B": "ds"}),
    4: ("A(i,l) = B(i,j) * C(j,k) * D(k,l)", {"B": "ds"}),
    5: ("A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)", {"B": "dss"}),
    6: ("A(i,l,m) = B(i,j,k) * C(j,l) * D(k,m)", {"B": "dss"}),
    7: ("A(i,j,m) = B(i,j,k) * C(k,l) * D(l,m)", {"B": "dss", "A": "dsd"}),
    8: ("A(i,m) = B(i,k,l) * C(l,j) * D(k,j) * E(j,m)", {"B": "dss"}),
}
NAMES = {1: "⟨SDDMM,SpMM⟩", 2: "⟨SDDMM,SpMM,GEMM⟩", 3: "⟨SpMMH,GEMM⟩", 4: "⟨SpMM,GEMM⟩", 5: "⟨3D TTMc⟩",
         6: "⟨SpTTM,TTM⟩", 7: "⟨SpTTM,SpTTM⟩", 8: "⟨MTTKRP,GEMM⟩"}
# Table 3: generated, then (schedules, distinct costs) after stages 1, 2 and 3.
PAPER_COUNTS = {1: (16169, (1472, 255), (1, 1), (1, 1)), 2: (145448232, (207129, 18277), (224, 43), (8, 3)),
                3: (7426, (692, 133), (2, 1), (2, 1)), 4: (258, (128, 34), (2, 1), (2, 1)),
                5: (14701776, (30203, 2541), (101, 26), (16, 3)), 6: (2561, (352, 60), (3, 1), (3, 1)),
                7: (109, (46, 13), (1, 1), (1, 1)), 8: (58127, (4715, 728), (5, 2), (2, 1))}
# Table 4: seconds of generation (16 threads) and of stages 1, 2 and 3.
PAPER_SECONDS = {1: (0.6314, 0.0130, 1.7232, 0.1215), 2: (10740.5, 167.5, 454.1, 1.5),
                 3: (0.4759, 0.0037, 0.8967, 0.0480), 4: (0.0546, 0.0005, 0.0566, 0.0497),
                 5: (864.3, 71.9, 25.8, 1.5), 6: (0.3046, 0.0062, 0.2382, 0.0500),
                 7: (0.0353, 0.0003, 0.0466, 0.0483), 8: (4.2, 0.0578, 4.7, 0.1232)}
RANGES = [f"{i} {op} {n}" for i in "ijklmn" for op, n in ((">=", 16), ("<=", 256))]
DENSER = {"ds": ["nnz(B) >= 2*i"], "dss": ["nnz(B, i, {0}) >= 2*i", "nnz(B) >= 2*nnz(B, i, {0})"]}


def constraints(number: int) -> list[str]:
    """The dimension ranges of the kernel's indices and B's rows or fibers of two nonzeros or more."""
    expression, formats = KERNELS[number]
    used = {c for c in expression.split("=")[1] if c.isalpha() and c.islower()}
    second = expression.split("B(")[1][2]
    return [r for r in RANGES if r[0] in used] + [c.format(second) for c in DENSER[formats["B"]]]


def front(number: int, rule: str = "everywhere", extra=(), stage1_groups: bool = False):
    expression, formats = KERNELS[number]
    return asp.autoschedule(expression, formats=formats, model="sparseauto", rule=rule,
                            constraints=constraints(number) + list(extra), stage1_groups=stage1_groups)


def _pair(count, groups) -> str:
    return f"{count:,} ({groups:,})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", type=int, nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--rule", choices=("everywhere", "literal"), default="everywhere")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: every kernel but 2 and 5 (whose generation takes the most)")
    add_option(parser)
    args = parser.parse_args(argv)
    quick_sizes(parser, args, kernel=[1, 3, 4, 6, 7, 8])
    records = Records(args.json)
    print("| # | kernel | generated (paper) | stage 1 (paper) | stage 2 (paper) | stage 3 (paper) | "
          "generation s (paper) | stage 1 s (paper) | stage 2 s (paper) | stage 3 s (paper) | compiled = numpy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for number in args.kernel:
        start = time.perf_counter()
        found = front(number, args.rule, stage1_groups=True)
        total = time.perf_counter() - start
        generated, *stages = found.stages
        paper = PAPER_COUNTS[number]
        counts = [f"{generated.count:,} ({paper[0]:,})"] + [
            f"{_pair(s.count, s.groups)} ({_pair(*p)})" for s, p in zip(stages, paper[1:])]
        seconds = [f"{s.seconds:.3g} ({p:g})" for s, p in zip(found.stages, PAPER_SECONDS[number])]
        for stage, found_stage, theirs, their_seconds in zip(("generated", "stage 1", "stage 2", "stage 3"),
                                                             found.stages, (paper[0], *(p[0] for p in paper[1:])),
                                                             PAPER_SECONDS[number]):
            records.add("count", kernel=f"{number} {NAMES[number]}", mode=f"rule {args.rule}", stage=stage,
                        count=found_stage.count, distinct_costs=getattr(found_stage, "groups", None),
                        seconds=found_stage.seconds, paper=theirs, paper_seconds=their_seconds)
        checked = "—" if args.no_check else f"{verify(found)[0]} / {len(found)}"
        print(f"| {number} | {NAMES[number]} | {' | '.join(counts)} | {' | '.join(seconds)} | {checked} |", flush=True)
        print(f"<!-- kernel {number}: {total:.2f} s through stage 3, {found.search.solver_queries} solver queries, "
              f"{found.search.solver_unknown} unknown -->")


if __name__ == "__main__":
    main()
