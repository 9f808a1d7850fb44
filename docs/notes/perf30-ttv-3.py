"""TTV (`A(i,j) = B(i,j,k) * c(k)`, B CSF, A CSR), before (a tree given as argv[1]) and after (argv[2]), at
1 and 2 threads, beside the serial C reference (bench/autosparse_bench/reference/ttv.c): each round runs one
fresh process per tree, alternating; in a process ours and the reference are called alternately, and the
figures are medians over rounds of each process's median. The data are the kernels suite's (seed 42):
the generated uniform and power-law 3-D tensors at full size, and med.tns.gz from /work/shared/data.

    PYTHONPATH is set per tree; the bench package is this worktree's.
    python docs/notes/perf30-ttv-3.py /work/main/src /work/wt-threads/src [rounds]
"""

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[2] / "bench")

CHILD = r'''
import json, sys, time
import numpy as np
import autosparse as asp
from autosparse_bench import data
from autosparse_bench.kernels import SIZES, Reference, Tensor3, family_tensor, ttv_case
dataset, threads = sys.argv[1], int(sys.argv[2])
shape, nnz = SIZES["full"]["tensor"]
t = Tensor3.of(data.load_tensor("/work/shared/data/med.tns.gz") if dataset == "med"
               else family_tensor(dataset, shape, nnz, 42))
case = ttv_case(dataset, t, np.random.default_rng(0), Reference())
reference = next(p.call for p in case.peers if p.name == "C reference")
kernel = asp.compile(case.expression, formats=case.formats, num_threads=threads)
case.check(kernel(**case.operands))
ours = lambda: kernel(**case.operands)
def sample(f):
    start = time.perf_counter(); calls = 0
    while True:
        f(); calls += 1
        if time.perf_counter() - start > 0.02:
            return (time.perf_counter() - start) / calls
for f in (ours, reference):
    f()
got = {"ours": [], "reference": []}
for _ in range(15):
    got["ours"].append(sample(ours)); got["reference"].append(sample(reference))
print(json.dumps({**{k: float(np.median(v)) for k, v in got.items()}, "parallel": kernel.ran_parallel}))
'''


def run(src: str, dataset: str, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{src}:{BENCH}", "OMP_WAIT_POLICY": "passive",
           "AUTOSPARSE_CACHE_DIR": "/tmp/cache-ttv-bench"}
    out = subprocess.run([sys.executable, "-c", CHILD, dataset, str(threads)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    import numpy as np
    print("| data | threads | before ms | after ms | C reference ms | reference / ours before → after | parallel after |")
    print("|---|---:|---:|---:|---:|---|---|")
    for dataset in ("uniform", "power-law", "med"):
        for threads in (1, 2):
            got = {"before": [], "after": [], "ref": []}
            parallel = set()
            for _ in range(rounds):
                for name, src in (("before", before), ("after", after)):
                    r = run(src, dataset, threads)
                    got[name].append(r["ours"])
                    got["ref"].append(r["reference"])
                    if name == "after":
                        parallel.add(r["parallel"])
            b, a, ref = (1e3 * float(np.median(got[k])) for k in ("before", "after", "ref"))
            print(f"| {dataset} | {threads} | {b:.3f} | {a:.3f} | {ref:.3f} | {ref / b:.2f}× → {ref / a:.2f}× | "
                  f"{'/'.join(map(str, sorted(parallel)))} |", flush=True)


if __name__ == "__main__":
    main()
