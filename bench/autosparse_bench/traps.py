"""The first-hour traps of issue 28, measured as a scipy/numpy user meets them, on one checkout or two.

Why: the front door is judged by what a user types, not by the kernels behind it. Each trap is the
spelling a user coming from scipy.sparse writes (`A @ x`, `np.dot(A, x)`, `evaluate` without
`format=`, a CSC operand beside a CSR one, a `coo_matrix` from `mmread`, ...), run in a fresh process so
that its peak memory is its own: the median wall time of its calls after a warm-up (which compiles), the
peak resident memory of the process, what came back (its type and stored entries) or the error it raised,
and scipy's time for the same result where scipy has one.

    PYTHONPATH=bench python -m autosparse_bench.traps                   # this checkout's autosparse
    PYTHONPATH=bench python -m autosparse_bench.traps --src ../before/src --src src   # before | after

Data are generated (seeded), scaled so that the dense results of "before" fit this 24 GB machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

TRAPS: dict[str, tuple[str, str]] = {}  # name -> (what the user writes, scipy's spelling or "")


def trap(user: str, peer: str = ""):
    def register(function):
        TRAPS[function.__name__] = (user, peer)
        return function
    return register


# --- data (seeded: before and after see the same operands) ----------------------------------------

def matrix(n: int = 20_000, nnz: int = 1_000_000, seed: int = 0, form: str = "csr"):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, n, nnz), rng.integers(0, n, nnz)
    m = sp.coo_matrix((rng.random(nnz), (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m.asformat(form)


def tensor3(shape=(12_000, 12_000, 400), nnz: int = 2_900_000, seed: int = 0):
    import numpy as np
    import autosparse as asp

    rng = np.random.default_rng(seed)
    coords = np.vstack([rng.integers(0, d, nnz) for d in shape])
    return asp.Tensor.from_coo(coords, rng.random(nnz), shape, format="sss")


# --- the traps: each returns (call, scipy's call or None) -----------------------------------------

@trap('evaluate("A(i,j) = B(i,j,k) * c(k)") of a 2.9M-nonzero sss tensor, no format=')
def ttv_without_format():
    import numpy as np
    import autosparse as asp

    b = tensor3()
    c = np.random.default_rng(1).random(b.shape[2])
    return lambda: asp.evaluate("A(i,j) = B(i,j,k) * c(k)", B=b, c=c), None


@trap('evaluate("C(i,j) = A(i,k) * B(k,j)") of CSR ca-AstroPh-sized matrices, no format=', "a @ b")
def spgemm_without_format():
    import autosparse as asp

    a = matrix(20_000, 200_000)
    ta = asp.Tensor.from_scipy(a)
    return lambda: asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=ta, B=ta), lambda: a @ a


@trap("A @ x (1M nonzeros, 20,000² CSR Tensor, x numpy)", "a @ x")
def matmul_vector():
    import numpy as np
    import autosparse as asp

    a = matrix()
    ta, x = asp.Tensor.from_scipy(a), np.random.default_rng(1).random(a.shape[1])
    return lambda: ta @ x, lambda: a @ x


@trap("np.dot(A, x) (1M nonzeros)", "a @ x")
def numpy_dot():
    import numpy as np
    import autosparse as asp

    a = matrix()
    ta, x = asp.Tensor.from_scipy(a), np.random.default_rng(1).random(a.shape[1])
    return lambda: np.dot(ta, x), lambda: a @ x


@trap("np.sum(A) (1M nonzeros)", "a.sum()")
def numpy_sum():
    import numpy as np
    import autosparse as asp

    a = matrix()
    ta = asp.Tensor.from_scipy(a)
    return lambda: np.sum(ta), lambda: a.sum()


@trap('evaluate("C(i,j) = A(i,k) * B(k,j)", A=csr, B=csc, format="csr") (200k nonzeros each)', "a @ b_csc")
def spgemm_csr_csc():
    import autosparse as asp

    a, b = matrix(20_000, 200_000), matrix(20_000, 200_000, seed=1, form="csc")
    ta, tb = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    return lambda: asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=ta, B=tb, format="csr"), lambda: a @ b


@trap('evaluate("C(i,j) = A(i,j) + B(i,j)", A=csr, B=csc) (1M nonzeros each)', "a + b_csc")
def add_csr_csc():
    import autosparse as asp

    a, b = matrix(), matrix(seed=1, form="csc")
    ta, tb = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    return lambda: asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=ta, B=tb, format="csr"), lambda: a + b


@trap("A + A.T (1M nonzeros)", "a + a.T")
def add_transpose():
    import autosparse as asp

    a = matrix()
    ta = asp.Tensor.from_scipy(a)
    return lambda: ta + ta.T, lambda: a + a.T


@trap('evaluate("y(i) = A(i,j) * x(j)", A=coo_matrix) per call (1M nonzeros, as mmread returns)', "a_coo @ x")
def spmv_coo_per_call():
    import numpy as np
    import autosparse as asp

    a = matrix(form="coo")
    x = np.random.default_rng(1).random(a.shape[1])
    warnings.simplefilter("ignore")
    return lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=a, x=x), lambda: a @ x


@trap('evaluate("y(i) = A(i,j) * x(j)", A=CSR Tensor) (1M nonzeros)', "a @ x")
def spmv_csr():
    import numpy as np
    import autosparse as asp

    a = matrix()
    ta, x = asp.Tensor.from_scipy(a), np.random.default_rng(1).random(a.shape[1])
    return lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=ta, x=x), lambda: a @ x


@trap('Tensor.to_format("csc") of a CSR Tensor (1M nonzeros)', "a.tocsc()")
def csr_to_csc():
    import autosparse as asp

    a = matrix()
    ta = asp.Tensor.from_scipy(a)
    return lambda: ta.to_format("csc"), lambda: a.tocsc()


@trap("y = evaluate(SpMV); y[0] + 1")
def index_dense_result():
    import numpy as np
    import autosparse as asp

    a = asp.Tensor.from_scipy(matrix(1000, 10_000))
    x = np.ones(1000)
    return lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=a, x=x)[0] + 1, None


@trap('evaluate("y(i) = A(i,j) * x(j)", ..., num_threads=2)')
def evaluate_num_threads():
    import numpy as np
    import autosparse as asp

    a = asp.Tensor.from_scipy(matrix(1000, 10_000))
    return lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=a, x=np.ones(1000), num_threads=2), None


@trap('evaluate("y(i) = A(i,j) * x(j)") with x of shape (n, 1)')
def column_vector():
    import numpy as np
    import autosparse as asp

    a = asp.Tensor.from_scipy(matrix(1000, 10_000))
    return lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=a, x=np.ones((1000, 1))), None


@trap('evaluate("d(i) = A(i,i)") (the diagonal)')
def diagonal():
    import autosparse as asp

    a = asp.Tensor.from_scipy(matrix(1000, 10_000))
    return lambda: asp.evaluate("d(i) = A(i,i)", A=a), None


@trap('evaluate("C(i,j) = A(i,j) / 2")')
def division():
    import autosparse as asp

    a = asp.Tensor.from_scipy(matrix(1000, 10_000))
    return lambda: asp.evaluate("C(i,j) = A(i,j) / 2", A=a), None


@trap('einsum("...ij,...jk->...ik", X, Y)')
def einsum_ellipsis():
    import numpy as np
    import autosparse as asp

    x = np.ones((3, 4, 5))
    return lambda: asp.einsum("...ij,...jk->...ik", x, np.ones((3, 5, 2))), None


@trap("asp.read of a missing file")
def missing_file():
    import autosparse as asp

    return lambda: asp.read("/nonexistent/matrix.mtx"), None


# --- running one trap in this process ---------------------------------------------------------------

def described(value) -> str:
    import numpy as np

    kind = type(value).__name__
    if isinstance(value, np.ndarray):
        return f"{kind} {value.shape} {value.dtype}"
    if hasattr(value, "nnz") and hasattr(value, "format"):
        return f"{kind} {getattr(value, 'shape', '')} format {value.format}, {value.nnz:,} stored"
    return f"{kind} {value!r:.40}"


def timed(call, repeat: int) -> tuple[float, object]:
    """The median seconds of `repeat` calls after a warm-up call (which compiles, or loads the kernel from
    the cache), and one more call's result; each timed result is dropped before the next call."""
    call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), call()


def run_one(name: str, repeat: int) -> dict:
    make = globals()[name]
    record: dict = {}
    try:
        ours, peer = make()
    except Exception as error:  # noqa: BLE001 - a trap that cannot even be set up is reported
        return {"error": f"setup: {type(error).__name__}: {error}"[:300]}
    try:
        record["seconds"], result = timed(ours, repeat)
        record["result"] = described(result)
    except Exception as error:  # noqa: BLE001 - the error is the finding
        record["error"] = f"{type(error).__name__}: {error}"[:300]
    if peer is not None:
        record["scipy_seconds"] = timed(peer, repeat)[0]
    return record


# --- the driver: every trap in a fresh process, per checkout ----------------------------------------

def measure(src: Path | None, name: str, repeat: int) -> dict:
    env = dict(os.environ)
    bench = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src) if src else "", bench) if p)
    process = subprocess.Popen([sys.executable, "-m", "autosparse_bench.traps", "--one", name, "--repeat", str(repeat)],
                               env=env, stdout=subprocess.PIPE, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    try:
        record = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        record = {"error": f"the process died (status {status})"}
    record["peak_rss_mb"] = usage.ru_maxrss / 1024
    return record


def cell(record: dict) -> str:
    if "error" in record:
        error = " ".join(record["error"].split())[:110]
        return f"**{error}** ({record['peak_rss_mb']:.0f} MB)"
    seconds = record["seconds"]
    time_text = f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.2f} s"
    return f"{time_text}, {record['peak_rss_mb']:.0f} MB; {record['result']}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, action="append", default=[],
                        help="a checkout's src/ to measure (repeat for before/after); default: the installed one")
    parser.add_argument("--trap", nargs="*", default=list(TRAPS), choices=list(TRAPS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.repeat)))
        return
    sources = args.src or [None]
    heads = [str(s) if s else "installed" for s in sources]
    print("| trap | " + " | ".join(heads) + " | scipy |")
    print("|---|" + "---|" * (len(heads) + 1))
    for name in args.trap:
        records = [measure(src, name, args.repeat) for src in sources]
        scipy = next((r["scipy_seconds"] for r in reversed(records) if "scipy_seconds" in r), None)
        scipy_text = "" if scipy is None else f"{scipy * 1e3:.3g} ms"
        print(f"| {TRAPS[name][0]} | " + " | ".join(cell(r) for r in records) + f" | {scipy_text} |", flush=True)


if __name__ == "__main__":
    main()
