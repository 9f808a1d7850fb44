"""The asymptotic search's time per kernel, and whether a search cut short picks what the whole one picks.

    PYTHONPATH=src python docs/notes/autoschedule-search.py                   # every kernel, full search
    PYTHONPATH=src python docs/notes/autoschedule-search.py --kernel SpMTTKRP --limit 120   # how far in 120 s
    PYTHONPATH=src python docs/notes/autoschedule-search.py --kernel MTTKRP TTMc --limit 1 2 20 --pick
    PYTHONPATH=src python docs/notes/autoschedule-search.py --kernel SDDMM TTMc --auto 2 20 --repeat 3

Each (kernel, limit) runs in a fresh interpreter (the searches' memos would otherwise carry over), a few
times (--repeat; the median is shown). With --pick, `select` ranks the frontier's candidates for
fixed random operands (a uniform and a skewed sparse tensor), and the best one's rank (estimated work,
hash levels, temporaries, transposes: all but the CIN's text, the last tie-break) is compared with the
best of the search under the largest limit given (none: the whole search).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

KERNELS = {
    "SpMV": ("a(i) = B(i,j) * c(j)", {"B": "ds"}),
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"}),
    "SpGEMM": ("A(i,j) = B(i,k) * C(j,k)", {"B": "ds", "C": "ds", "A": "ds"}),
    "SpGEMM2": ("A(i,j) = B(i,k) * C(k,l) * D(j,l)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"}),
    "SpGEMMH": ("A(i,j) = B(i,k) * C(j,k) * D(j,k)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"}),
    "SpMTTKRP": ("A(i,j) = B(i,k,l) * C(j,k) * D(j,l)", {"B": "dss", "C": "ds", "D": "ds", "A": "ds"}),
    "SDDMM": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "ds", "A": "ds"}),
    "MTTKRP": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "dss"}),
    "TTMc": ("A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)", {"B": "dss"}),
    "chain": ("A(i,m) = B(i,j) * C(j,k) * D(k,l) * E(l,m)", {"B": "ds", "C": "ds", "D": "ds", "E": "ds", "A": "ds"}),
}

OPERANDS = """
import numpy as np
import autosparse as asp
from autosparse.notation import accesses, parse


def operands(assignment, formats, skew=False):
    # Fixed random operands: sparse ones 5% dense (with skew, only in the first quarter of their rows).
    sizes = dict(zip("ijklmn", (60, 50, 40, 30, 20, 10)))
    rng = np.random.default_rng(1)
    tensors = {}
    for access in accesses(assignment.rhs):
        shape = tuple(sizes[i.name] for i in access.indices)
        fmt = formats.get(access.tensor, "d" * len(shape))
        values = rng.random(shape)
        if "s" in fmt:
            keep = rng.random(shape) < 0.05
            if skew:
                keep &= np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)) < shape[0] // 4
            tensors[access.tensor] = asp.Tensor.from_numpy(values * keep, format=fmt)
        else:
            tensors[access.tensor] = values
    return tensors
"""

ONE = OPERANDS + """
import hashlib, json, sys, time
from autosparse.autoschedule.asymptotic.realise import hash_levels
from autosparse.autoschedule.select import ranking
expression, formats, limit, taco, pick = json.loads(sys.argv[1])
began, cpu = time.perf_counter(), time.process_time()
front = asp.autoschedule(expression, formats=formats, taco=taco, time_limit=limit)
seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
found = front.search
# every program's cost and witness, to compare two commits' searches (equal digests: the same search)
digest = hashlib.sha1("\\n".join(sorted(f"{p}|{c}|{found.witnesses.get(p)}" for p, c in found.costs.items())).encode())
picks = []
if pick:
    for skew in (False, True):
        work, best = ranking(front, operands(parse(expression), formats, skew))[0]
        picks.append([work, hash_levels(best.formats), len(best.temporaries), len(best.transposes)])
print(json.dumps([found.processed, found.total, len(found.frontier), seconds, found.complete, picks, cpu,
                  digest.hexdigest()[:10]]))
"""


AUTO = OPERANDS + """
import json, sys, time
from autosparse.api import auto
expression, formats, seconds = json.loads(sys.argv[1])
if seconds is not None:
    auto.SEARCH_SECONDS = seconds
assignment = parse(expression)
tensors = operands(assignment, formats)
began = time.perf_counter()
front, choice = auto.chosen(assignment, formats, tensors)
decided = time.perf_counter() - began
asp.evaluate(expression, format=formats.get(assignment.lhs.tensor), schedule="auto", operands=tensors)
print(json.dumps([decided, time.perf_counter() - began]))
"""


def first_auto_call(expression: str, formats: dict, seconds: float | None) -> list:
    """`schedule="auto"`'s first decision and first call (compiling included) in a fresh process with an
    empty cache directory, under SEARCH_SECONDS = `seconds` (None: the module's)."""
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", AUTO, json.dumps([expression, formats, seconds])],
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "AUTOSPARSE_CACHE_DIR": cache})
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_one(expression: str, formats: dict, limit: float | None, taco: bool, pick: bool) -> list:
    argument = json.dumps([expression, formats, limit, taco, pick])
    out = subprocess.run([sys.executable, "-c", ONE, argument], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--limit", nargs="+", type=float, default=[None], help="time limits (s); none: full")
    parser.add_argument("--taco", action="store_true")
    parser.add_argument("--pick", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--auto", nargs="*", type=float, default=None,
                        help="time schedule='auto''s first call instead, under these SEARCH_SECONDS")
    args = parser.parse_args()
    if args.auto is not None:
        print("kernel     SEARCH_SECONDS  decided s (median)  first call s (median)")
        for name in args.kernel:
            for seconds in args.auto or [None]:
                runs = [first_auto_call(*KERNELS[name], seconds) for _ in range(args.repeat)]
                print(f"{name:10} {str(seconds):15} {statistics.median(r[0] for r in runs):17.2f}  "
                      f"{statistics.median(r[1] for r in runs):20.2f}", flush=True)
        return
    print("kernel     limit  programs costed/total  frontier  seconds(median)  cpu s  digest      complete  "
          "pick=longest's (estimated work of each operand set's pick)")
    for name in args.kernel:
        expression, formats = KERNELS[name]
        reference = None
        for limit in sorted(args.limit, key=lambda x: -float("inf") if x is None else -x):
            runs = [run_one(expression, formats, limit, args.taco, args.pick) for _ in range(args.repeat)]
            processed, total, frontier, _, complete, picks, _, digest = runs[-1]
            seconds, cpu = statistics.median(r[3] for r in runs), statistics.median(r[6] for r in runs)
            reference = picks if reference is None else reference
            same = "-" if not args.pick else ("yes" if picks == reference else "NO")
            works = " ".join(f"{pick[0]:.0f}" for pick in picks)
            print(f"{name:10} {str(limit):6} {processed:>9}/{total:<11} {frontier:8} {seconds:12.2f}    "
                  f"{cpu:6.2f}  {digest}  {str(complete):8}  {same} {works}", flush=True)


if __name__ == "__main__":
    main()
