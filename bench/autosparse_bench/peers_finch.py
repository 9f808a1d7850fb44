"""finch-tensor-lite as a peer of the applications suite, run in its own interpreter.

Why a subprocess: finch-tensor-lite 0.5.0 pins numpy < 2.4 and numba < 0.63.1, older than the main
environment's, so it lives in a venv of its own (design31.md §4: `python -m venv --system-site-packages
/tmp/ftlenv; pip install --no-deps finch_tensor_lite lark`). This file is both sides: the suite imports
it for `run` and `probe` (numpy only), and runs it as a script under the venv's Python, where it imports
`finchlite` and runs one application's program with the COMPILE_NUMBA scheduler (the default
interpreter took 24 s for one 50×50 product). Its first call (numba compilation) is timed apart from
the steady runs after it.

Finch's programs take dense operands: in 0.5.0 a sparse-list level has no `from_numpy`, and a CSR built
from its level fields fails in `compute` (`probe` tries one and reports the error). Each program is the
same algorithm as the example it stands beside, on operands the suite prepared (a pre-scaled PageRank
transition, the lower triangle of a graph), so that the same work is done.

    python peers_finch.py APPLICATION IN.npz OUT.npz REPEAT    # a program: OUT.npz, and JSON timings on stdout
    python peers_finch.py --probe                              # the version, and the sparse CSR attempt
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

VENV_PYTHON = Path("/tmp/ftlenv/bin/python")


def default_python() -> str | None:
    """$AUTOSPARSE_FINCH_PYTHON, else the venv of design31.md §4 where it exists."""
    return os.environ.get("AUTOSPARSE_FINCH_PYTHON") or (str(VENV_PYTHON) if VENV_PYTHON.exists() else None)


# --- the programs (run under the venv's Python; `fl` is finchlite) ---------------------------------------

def _column(fl, vector: np.ndarray):
    """A vector as an n×1 matrix: finch 0.5.0's matmul of a matrix and a 1-D array fails (IndexError)."""
    return _array(fl, np.reshape(vector, (-1, 1)))


def _array(fl, array: np.ndarray):
    """A lazy finch array of a C-ordered copy (BufferizedNDArray reshapes without copying)."""
    return fl.lazy(fl.asarray(np.ascontiguousarray(array, dtype=np.float64)))


def _value(result) -> np.ndarray:
    return np.asarray(result.to_numpy() if hasattr(result, "to_numpy") else result)


def pagerank(fl, transition, dangling, damping, steps):
    """examples/pagerank.py's iteration; `transition` is damping·M, built by the suite."""
    n = len(transition)
    matrix = _array(fl, transition)
    rank = np.full(n, 1.0 / n)
    for _ in range(int(steps)):
        teleport = np.full(n, (1.0 - damping + damping * rank[dangling].sum()) / n)
        product = fl.add(fl.matmul(matrix, _column(fl, rank)), _column(fl, teleport))
        rank = _value(fl.compute(product, ctx=fl.COMPILE_NUMBA)).ravel()
    return rank


def triangles(fl, lower):
    """sum(L ∘ (L @ L)) over the dense lower triangle, summed by rows in finch and the rows in numpy: in 0.5.0
    a full reduction under COMPILE_NUMBA returns 0.0 (sum of a 60×60 matrix of 380 ones: 0.0)."""
    below = _array(fl, lower)
    rows = fl.compute(fl.sum(fl.multiply(below, fl.matmul(below, below)), axis=1), ctx=fl.COMPILE_NUMBA)
    return round(_value(rows).sum())


def cg(fl, matrix, rhs, steps):
    """Textbook CG from x = 0, the products in finch and the vector updates in numpy."""
    operator = _array(fl, matrix)
    solution, residual = np.zeros(len(rhs)), rhs.astype(np.float64).copy()
    direction, norm = residual.copy(), residual @ residual
    for _ in range(int(steps)):
        product = _value(fl.compute(fl.matmul(operator, _column(fl, direction)), ctx=fl.COMPILE_NUMBA)).ravel()
        alpha = norm / (direction @ product)
        solution += alpha * direction
        residual -= alpha * product
        updated = residual @ residual
        direction = residual + (updated / norm) * direction
        norm = updated
    return solution


def gcn(fl, adjacency, scale, features, weight):
    """relu(d ∘ (A @ P + P)) with P = d ∘ (X @ W), the products in finch and the scalings, the self loops and
    the maximum in numpy: in 0.5.0 `maximum` of two arrays fails (TypeError: max() takes 1 positional argument
    but 2 were given)."""
    projected = scale * _value(fl.compute(fl.matmul(_array(fl, features), _array(fl, weight)), ctx=fl.COMPILE_NUMBA))
    mixed = _value(fl.compute(fl.matmul(_array(fl, adjacency), _array(fl, projected)), ctx=fl.COMPILE_NUMBA))
    return np.maximum(scale * (mixed + projected), 0.0)


#: The applications finch runs, by the suite's names.
PROGRAMS = {"pagerank": pagerank, "triangles": triangles, "cg": cg, "gcn": gcn}
#: Why the others have no finch program.
ABSENT = {"bfs": "BFS needs a lor_land product, and finchlite's matmul is plus_times",
          "sssp": "SSSP needs a min_plus product, and finchlite's matmul is plus_times",
          "cp_als": "its MTTKRP reads the sparse tensor, and finch's sparse levels did not compute a product in 0.5.0"}


def sparse_attempt(fl) -> str:
    """One CSR matrix times a dense column, built from finch's level fields: what fails, or "works"."""
    try:
        from finchlite.codegen import NumpyBuffer

        rows, cols = 4, 3
        indptr, indices = np.array([0, 1, 1, 3, 3]), np.array([2, 0, 1])
        fmt = fl.fiber_tensor(fl.dense(fl.sparse_list(fl.element(0.0))))
        values = fmt.lvl_t.lvl_t.lvl_t.from_fields(np.array([1.0, 2.0, 3.0]))
        compressed = fmt.lvl_t.lvl_t.from_fields(values, cols, NumpyBuffer(indptr), NumpyBuffer(indices))
        matrix = fmt.from_fields(fmt.lvl_t.from_fields(compressed, rows, cols), (rows, cols), 0, False)
        result = _value(fl.compute(fl.matmul(fl.lazy(matrix), _column(fl, np.ones(cols))), ctx=fl.COMPILE_NUMBA))
        expected = np.array([1.0, 0.0, 5.0, 0.0])
        return "works" if np.allclose(result.ravel(), expected) else f"computes {result.ravel()}, not {expected}"
    except Exception as error:  # noqa: BLE001 - what fails is the finding
        return f"{type(error).__name__}: {str(error)[:200]}"


def _script(argv: list[str]) -> None:
    import importlib.metadata

    import finchlite as fl

    if argv == ["--probe"]:
        print(json.dumps({"version": importlib.metadata.version("finch-tensor-lite"), "sparse": sparse_attempt(fl)}))
        return
    application, source, target, repeat = argv
    with np.load(source) as stored:
        operands = {name: stored[name] for name in stored.files}
    program = PROGRAMS[application]
    start = time.perf_counter()
    result = program(fl, **operands)
    first = time.perf_counter() - start
    steady = []
    for _ in range(int(repeat)):
        start = time.perf_counter()
        program(fl, **operands)
        steady.append(time.perf_counter() - start)
    np.save(target, np.asarray(result))
    print(json.dumps({"first": first, "steady": steady}))


# --- the suite's side --------------------------------------------------------------------------------------

@dataclass
class Ran:
    result: np.ndarray | None = None
    first: float | None = None
    steady: list[float] = field(default_factory=list)
    error: str = ""


def _interpreter(python: str, arguments: list[str], budget: float) -> tuple[dict | None, str]:
    """The script's JSON answer under `python`, or (None, why not)."""
    try:
        done = subprocess.run([python, __file__, *arguments], capture_output=True, text=True, timeout=budget,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"over its budget of {budget:g} s"
    except OSError as error:
        return None, f"{python} did not start ({error})"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"failed ({last[:300]})"
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def run(python: str, application: str, operands: dict[str, np.ndarray], repeat: int, budget: float) -> Ran:
    """One application's finch program on `operands`, its first call and `repeat` steady runs timed."""
    with tempfile.TemporaryDirectory(prefix="autosparse-finch-") as folder:
        source, target = Path(folder) / "in.npz", Path(folder) / "out.npy"
        np.savez(source, **operands)
        answer, error = _interpreter(python, [application, str(source), str(target), str(repeat)], budget)
        if answer is None:
            return Ran(error=error)
        return Ran(np.load(target), answer["first"], answer["steady"])


def probe(python: str) -> str:
    """A note for the suite: finch's version under `python` and what one sparse CSR product does."""
    answer, error = _interpreter(python, ["--probe"], 600)
    if answer is None:
        return f"finch: n/a, {error}"
    return (f"finch: finch-tensor-lite {answer['version']} under {python}, COMPILE_NUMBA, dense operands; "
            f"a CSR product from its level fields: {answer['sparse']}")


if __name__ == "__main__":
    _script(sys.argv[1:])
