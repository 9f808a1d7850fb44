"""Whole applications (examples/: PageRank, BFS, SSSP, triangle counting, conjugate gradients, CP-ALS, a GCN
layer) timed as a user runs them: autosparse eager (`lazy=False`: one kernel per operation) beside autosparse
lazy (the same program planned into fused kernels: by `asp.lazy` and `asp.compute`, or, for the loops of short
steps — PageRank, BFS, SSSP, CG — a step traced once by `asp.fused`), and beside the peers that can express
the program.

Why: issue 31's promise is whole array programs, not single kernels; fusion pays only if a whole loop of
them runs faster than the same loop eagerly, and the peers a user would otherwise write it in (scipy with
numpy, SuiteSparse:GraphBLAS, finch-tensor-lite) set the bar.

    autosparse bench applications                      # shipped graphs, matrices and tensors (minutes)
    autosparse bench applications --quick              # small generated inputs (CI)
    autosparse bench applications --apps pagerank bfs --data Wiki-Vote

Every contender computes one application on one input from the same scipy (or numpy) operands, conversions
and set-up included: each library's own way in is part of what a user pays. The iterative applications do
a fixed amount of work, so every contender does the same: PageRank and CG run --steps iterations (their
tolerance set to 0), CP-ALS --steps sweeps; BFS and SSSP run to their fixed point, which is the same for
every correct contender. A contender's first call (kernel compilation, JIT) is reported apart from the
steady state: the median of --repeat interleaved runs after it (autosparse_bench/timing.py). The suite
compiles into a kernel cache of its own, started empty, and runs lazy first: eager's first call compiles
only the kernels lazy's did not. Ours is checked against scipy's answer (numpy's for CP-ALS), every peer
against ours, before any time counts: a wrong result is reported as WRONG and not timed. "kernel calls / step" counts the autosparse kernels one run calls
(eager, then lazy), over the steps the run took where it reports them.

Peers: scipy/numpy always; python-graphblas where the program is a semiring product (PageRank and CG
plus_times, BFS lor_land under a complemented structural mask, SSSP min_plus, triangles plus_pair masked
mxm, GCN plus_times SpMM); finch-tensor-lite in a subprocess under its own Python (autosparse_bench/
peers_finch.py: --finch-python, $AUTOSPARSE_FINCH_PYTHON, else /tmp/ftlenv/bin/python), on dense copies of
the operands (its sparse levels did not compute a product in 0.5.0: the run tries one CSR product and
prints the error), densified before its timing starts, where they fit --finch-dense entries.
Ratios are the peer's time over autosparse lazy's: above 1, autosparse is faster.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse import csgraph

import autosparse as asp
from autosparse.runtime import sequence
from autosparse_bench import data, machine, peers_finch
from autosparse_bench.kernels import load_graphblas
from autosparse_bench.records import Records, add_option
from autosparse_bench.timing import Mismatch, Timing, batch_for, interleaved, seconds_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DAMPING = 0.85
GCN_FEATURES, GCN_OUTPUTS, CP_RANK = 32, 16, 8
#: Entries of the largest dense copy finch is given by default: 2048², so that bcsstk13 (2,003²) runs.
FINCH_DENSE = 1 << 22
#: The shipped inputs each application runs on by default (what is absent is skipped).
SHIPPED = {"pagerank": ("Wiki-Vote", "soc-epinions", "ca-CondMat"), "bfs": ("Wiki-Vote", "soc-epinions", "ca-CondMat"),
           "sssp": ("Wiki-Vote", "soc-epinions"), "triangles": ("facebook_combined", "ca-CondMat", "Wiki-Vote"),
           "cg": ("bcsstk13", "bcsstk15"), "cp_als": ("med", "yelp"), "gcn": ("facebook_combined", "ca-CondMat")}
#: A generated look-alike larger than the shipped inputs, run beside them by default: on those, a step's Python
#: (recording, planning, each call's checks) weighs as much as its kernels; here the kernels decide.
GENERATED = {"cg": ("stencil 700²", ("stencil", 700, 700), {}),
             **{application: ("rmat-17", ("rmat", 17), {"seed": 0}) for application in ("pagerank", "bfs", "sssp", "gcn")}}


@dataclass(frozen=True)
class Case:
    """One application on one input: the example's arguments, and each peer's call on the same operands."""

    application: str
    dataset: str
    args: tuple
    options: dict
    nnz: int
    peers: dict[str, Callable[[], Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Application:
    example: str  # examples/<example>.py
    function: str
    plain: Callable[[Any], Any]  # the part of a result the contenders are compared on
    steps: Callable[[Any, tuple], int | None]  # the steps a run took, from its result and arguments
    check: Callable[[Any, Any], None]  # raises Mismatch unless a result (plain) agrees with the expected one


# --- checks ----------------------------------------------------------------------------------------------

def close(rtol: float) -> Callable[[Any, Any], None]:
    """A check of float results: the same shape, the same non-finite entries, the rest within `rtol` of the
    expected in norm (contenders sum in different orders)."""
    def check(got, expected) -> None:
        got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
        if got.shape != expected.shape:
            raise Mismatch(f"shape {got.shape}, expected {expected.shape}")
        finite = np.isfinite(expected)  # inf where unreachable (SSSP); nan where an input is no graph
        if not np.array_equal(got[~finite], expected[~finite], equal_nan=True):
            raise Mismatch("its infinite or nan entries differ")
        error, size = np.linalg.norm(got[finite] - expected[finite]), max(np.linalg.norm(expected[finite]), 1e-300)
        if error > rtol * size:
            raise Mismatch(f"relative error {error / size:.3g}")
    return check


def equal(got, expected) -> None:
    """A check of exact results: BFS levels, triangle counts."""
    if not np.array_equal(np.asarray(got), np.asarray(expected)):
        raise Mismatch(f"{np.count_nonzero(np.asarray(got) != np.asarray(expected))} entries differ"
                       if np.shape(got) == np.shape(expected) else f"{got!r}, expected {expected!r}")


def cp_plain(result):
    """CP-ALS's weights then factors as one flat vector: eager and lazy start from the same seed."""
    weights, factors = result
    return np.concatenate([np.ravel(weights), *(np.ravel(f) for f in factors)])


APPLICATIONS = {
    "pagerank": Application("pagerank", "pagerank", lambda r: r[0], lambda r, args: r[1], close(1e-9)),
    "bfs": Application("bfs", "bfs", lambda r: r, lambda r, args: int(r.max()) + 1, equal),
    "sssp": Application("sssp", "shortest_paths", lambda r: r, lambda r, args: None, close(1e-12)),
    "triangles": Application("triangles", "triangles", lambda r: r, lambda r, args: 1, equal),
    "cg": Application("cg", "conjugate_gradient", lambda r: r[0], lambda r, args: r[1], close(1e-6)),
    "cp_als": Application("cp_als", "cp_als", cp_plain, lambda r, args: args[2], close(1e-6)),
    "gcn": Application("gcn", "gcn_layer", lambda r: r, lambda r, args: 1, close(1e-9)),
}


# --- the peers -------------------------------------------------------------------------------------------

def scipy_pagerank(adjacency: sp.csr_array, steps: int) -> np.ndarray:
    """examples/pagerank.py's iteration in scipy: dangling vertices spread their rank evenly."""
    n = adjacency.shape[0]
    out_degree = np.asarray(adjacency.sum(axis=1)).ravel()
    dangling = out_degree == 0
    scale = np.divide(1.0, out_degree, out=np.zeros(n), where=~dangling)
    transition = sp.csr_array(adjacency.T @ sp.diags_array(scale))
    rank = np.full(n, 1.0 / n)
    for _ in range(steps):
        rank = DAMPING * (transition @ rank) + (1.0 - DAMPING + DAMPING * rank[dangling].sum()) / n
    return rank


def graphblas_pagerank(gb, adjacency: sp.csr_array, steps: int) -> np.ndarray:
    n = adjacency.shape[0]
    matrix = gb.io.from_scipy_sparse(adjacency)
    out_degree = matrix.reduce_rowwise().new()
    transition = out_degree.apply(gb.unary.minv).new().diag().mxm(matrix).new()  # row j: j's links over its degree
    dangling = gb.Vector.from_coo(np.flatnonzero(np.diff(adjacency.indptr) == 0), 1.0, size=n)
    rank = gb.Vector.from_dense(np.full(n, 1.0 / n))
    for _ in range(steps):
        spread = rank.ewise_mult(dangling).new().reduce().new().value or 0.0
        updated = transition.T.mxv(rank, gb.semiring.plus_times).new().apply(gb.binary.times, right=DAMPING).new()
        updated(accum=gb.binary.plus)[:] << (1.0 - DAMPING + DAMPING * spread) / n
        rank = updated
    return rank.to_dense(fill_value=0.0)


def scipy_bfs(adjacency: sp.csr_array, source: int) -> np.ndarray:
    """Level-synchronous BFS along out-links: the next frontier is Aᵀ·frontier, minus what was visited."""
    incoming = sp.csr_array(adjacency.T, dtype=np.float64)
    levels = np.full(adjacency.shape[0], -1, dtype=np.int64)
    frontier = np.zeros(adjacency.shape[0], dtype=bool)
    frontier[source] = True
    depth = 0
    while frontier.any():
        levels[frontier] = depth
        frontier = (incoming @ frontier.astype(np.float64) != 0) & (levels < 0)
        depth += 1
    return levels


def graphblas_bfs(gb, adjacency: sp.csr_array, source: int) -> np.ndarray:
    n = adjacency.shape[0]
    matrix = gb.io.from_scipy_sparse(adjacency).apply(gb.unary.one).new(dtype=bool)
    levels = gb.Vector(np.int64, n)
    frontier = gb.Vector(bool, n)
    frontier[source] = True
    depth = 0
    while frontier.nvals:
        levels(frontier.S) << depth
        frontier(~levels.S, replace=True) << matrix.T.mxv(frontier, gb.semiring.lor_land)
        depth += 1
    return levels.to_dense(fill_value=-1)


def scipy_sssp(weights: sp.csr_array, source: int) -> np.ndarray:
    """scipy's own single-source shortest paths (Dijkstra: the weights are positive)."""
    return csgraph.dijkstra(weights, directed=True, indices=source)


def graphblas_sssp(gb, weights: sp.csr_array, source: int) -> np.ndarray:
    """Bellman-Ford over min_plus, as examples/sssp.py, until nothing changes."""
    matrix = gb.io.from_scipy_sparse(weights)
    distance = gb.Vector(float, weights.shape[0])
    distance[source] = 0.0
    while True:
        relaxed = distance.dup()
        relaxed(accum=gb.binary.min) << matrix.T.mxv(distance, gb.semiring.min_plus)
        if relaxed.isequal(distance):
            return distance.to_dense(fill_value=np.inf)
        distance = relaxed


def lower_pattern(adjacency: sp.csr_array) -> sp.csr_array:
    """The strictly lower triangle of the undirected pattern, as examples/triangles.py counts over."""
    pattern = sp.csr_array(adjacency, dtype=np.float64)
    pattern.data[:] = 1.0
    return sp.csr_array(sp.tril(((pattern + pattern.T) > 0).astype(np.float64), -1))


def scipy_triangles(adjacency: sp.csr_array) -> int:
    lower = lower_pattern(adjacency)
    return round((lower * (lower @ lower)).sum())


def graphblas_triangles(gb, adjacency: sp.csr_array) -> int:
    lower = gb.io.from_scipy_sparse(lower_pattern(adjacency))
    counts = gb.Matrix(float, *lower.shape)
    counts(lower.S) << lower.mxm(lower.T, gb.semiring.plus_pair)
    return round(counts.reduce_scalar().new().value or 0)


def scipy_cg(matrix: sp.csr_array, rhs: np.ndarray, steps: int) -> np.ndarray:
    """scipy's own CG from x = 0, held to `steps` iterations (its tolerance 0)."""
    solution, _ = spla.cg(matrix, rhs, rtol=0.0, atol=0.0, maxiter=steps)
    return solution


def graphblas_cg(gb, matrix: sp.csr_array, rhs: np.ndarray, steps: int) -> np.ndarray:
    """Textbook CG from x = 0, every vector operation in GraphBLAS."""
    operator = gb.io.from_scipy_sparse(matrix)
    solution = gb.Vector.from_dense(np.zeros(len(rhs)))
    residual = gb.Vector.from_dense(rhs)
    direction = residual.dup()
    norm = residual.inner(residual).new().value
    for _ in range(steps):
        product = operator.mxv(direction, gb.semiring.plus_times).new()
        alpha = norm / direction.inner(product).new().value
        solution(accum=gb.binary.plus) << direction.apply(gb.binary.times, right=alpha)
        residual(accum=gb.binary.minus) << product.apply(gb.binary.times, right=alpha)
        updated = residual.inner(residual).new().value
        direction = residual.ewise_add(direction.apply(gb.binary.times, right=updated / norm), gb.binary.plus).new()
        norm = updated
    return solution.to_dense(fill_value=0.0)


def undirected(matrix: sp.csr_array) -> sp.csr_array:
    """The graph GCN is defined on, prepared before any timing: an undirected one (a symmetric pattern of
    ones) without self loops; the shipped social graphs already are (rmat-17 is directed)."""
    pattern = sp.csr_array(((matrix + matrix.T) != 0).astype(np.float64))
    pattern.setdiag(0)
    pattern.eliminate_zeros()
    return pattern


def gcn_scale(degrees: np.ndarray) -> np.ndarray:
    """D^-1/2 as a column, from the row sums of A (A + I's are one more)."""
    return 1.0 / np.sqrt(np.asarray(degrees, dtype=np.float64).ravel() + 1.0)[:, None]


def scipy_gcn(adjacency: sp.csr_array, features: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """relu(D^-1/2 (A + I) D^-1/2 X W), neither Â nor A + I formed, as examples/gcn.py computes it."""
    scale = gcn_scale(adjacency.sum(axis=1))
    projected = scale * (features @ weight)
    return np.maximum(scale * (adjacency @ projected + projected), 0.0)


def graphblas_gcn(gb, adjacency: sp.csr_array, features: np.ndarray, weight: np.ndarray) -> np.ndarray:
    matrix = gb.io.from_scipy_sparse(adjacency)
    scale = gcn_scale(matrix.reduce_rowwise(gb.monoid.plus).new().to_dense(fill_value=0.0))
    projected = scale * (features @ weight)
    mixed = matrix.mxm(gb.Matrix.from_dense(projected), gb.semiring.plus_times).new()
    return np.maximum(scale * (mixed.to_dense(fill_value=0.0) + projected), 0.0)


def numpy_cp_als(tensor: data.SparseTensor, rank: int, iterations: int, seed: int) -> np.ndarray:
    """examples/cp_als.py's sweeps from the same random start, each MTTKRP as the rows of the other two
    factors gathered per entry, multiplied, and summed into the mode's rows by a scipy product."""
    rng = np.random.default_rng(seed)
    factors = [rng.random((extent, rank)) for extent in tensor.shape]
    weights = np.ones(rank)
    entries = np.arange(tensor.nnz)
    summing = [sp.csr_array((tensor.vals, (tensor.coords[m], entries)), shape=(tensor.shape[m], tensor.nnz))
               for m in range(3)]
    for _ in range(iterations):
        for mode in range(3):
            first, last = (m for m in range(3) if m != mode)
            product = summing[mode] @ (factors[first][tensor.coords[first]] * factors[last][tensor.coords[last]])
            grams = np.prod([f.T @ f for m, f in enumerate(factors) if m != mode], axis=0)
            solved = np.linalg.lstsq(grams, product.T, rcond=None)[0].T
            weights = np.linalg.norm(solved, axis=0)
            factors[mode] = solved / np.where(weights == 0, 1.0, weights)
    return cp_plain((weights, factors))


# --- inputs ----------------------------------------------------------------------------------------------

def weighted(graph: sp.csr_array, seed: int) -> sp.csr_array:
    """The graph's edges with positive random weights (the shipped graphs are unweighted)."""
    rng = np.random.default_rng(seed)
    return sp.csr_array((rng.random(graph.nnz) + 0.1, graph.indices, graph.indptr), shape=graph.shape)


def source_of(graph: sp.csr_array) -> int:
    """The vertex with the most out-links: a search from it reaches much of the graph."""
    return int(np.argmax(np.diff(graph.indptr)))


def spd(matrix: sp.csr_array) -> sp.csr_array:
    """A symmetric positive definite matrix from any square one: its symmetric part, made diagonally
    dominant where it is not (the bcsstk stiffness matrices are SPD already and stay as they are)."""
    symmetric = data.canonical((matrix + matrix.T) / 2)
    if np.all(symmetric.diagonal() > 0) and np.allclose((symmetric - symmetric.T).data, 0):
        return symmetric
    return data.canonical(symmetric + sp.diags_array(np.abs(symmetric).sum(axis=1) + 1.0))


def inputs(args) -> list[tuple[str, str, Any]]:
    """(application, dataset, input): a matrix, or a data.SparseTensor for CP-ALS."""
    found = []
    for application in args.apps:
        if args.quick:
            made = (data.generate("uniform_tensor", (30, 40, 50), 3_000, seed=args.seed) if application == "cp_als"
                    else data.generate("stencil", 12, 12) if application == "cg"
                    else data.generate("rmat", 9, seed=args.seed))
            found.append((application, "generated", made))
            continue
        kind = "tns" if application == "cp_als" else "mtx"
        paths = {data.name_of(p): p for p in data.shipped(kind)}
        for name in args.data or SHIPPED[application]:
            if name in paths:
                load = data.load_tensor if kind == "tns" else data.load_matrix
                found.append((application, name, load(paths[name])))
        if not args.data and application in GENERATED:
            name, (generator, *sizes), options = GENERATED[application]
            found.append((application, name, data.generate(generator, *sizes, **options)))
    return found


def make_case(application: str, dataset: str, made, args, gb) -> Case:
    """The example's arguments and the peers' calls for one input."""
    steps, seed = args.steps, args.seed
    if application == "cp_als":
        tensor = asp.Tensor.from_coo(made.coords, made.vals, made.shape, format="csf")
        return Case(application, dataset, (tensor, CP_RANK, steps), {"seed": seed}, made.nnz,
                    {"numpy": lambda: numpy_cp_als(made, CP_RANK, steps, seed)})
    matrix = made
    peers: dict[str, Callable[[], Any]] = {}
    if application == "pagerank":
        call_args, options = (matrix,), {"tol": 0.0, "max_iterations": steps}
        peers["scipy"] = lambda: scipy_pagerank(matrix, steps)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_pagerank(gb, matrix, steps)
    elif application == "bfs":
        source = source_of(matrix)
        call_args, options = (matrix, source), {}
        peers["scipy"] = lambda: scipy_bfs(matrix, source)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_bfs(gb, matrix, source)
    elif application == "sssp":
        matrix = weighted(matrix, seed)
        source = source_of(matrix)
        call_args, options = (matrix, source), {}
        peers["scipy"] = lambda: scipy_sssp(matrix, source)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_sssp(gb, matrix, source)
    elif application == "triangles":
        call_args, options = (matrix,), {}
        peers["scipy"] = lambda: scipy_triangles(matrix)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_triangles(gb, matrix)
    elif application == "cg":
        matrix = spd(matrix)
        rhs = matrix @ np.ones(matrix.shape[0])
        call_args, options = (matrix, rhs), {"tol": 0.0, "max_iterations": steps}
        peers["scipy"] = lambda: scipy_cg(matrix, rhs, steps)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_cg(gb, matrix, rhs, steps)
    elif application == "gcn":
        matrix = undirected(matrix)
        rng = np.random.default_rng(seed)
        features, weight = rng.random((matrix.shape[1], GCN_FEATURES)), rng.random((GCN_FEATURES, GCN_OUTPUTS)) - 0.5
        call_args, options = (matrix, features, weight), {}
        peers["scipy"] = lambda: scipy_gcn(matrix, features, weight)
        if gb:
            peers["GraphBLAS"] = lambda: graphblas_gcn(gb, matrix, features, weight)
    else:
        raise ValueError(f"no application {application!r}")
    return Case(application, dataset, call_args, options, matrix.nnz, peers)


# --- running ---------------------------------------------------------------------------------------------

def example_function(application: str, folder: Path):
    """The example's function, loaded from `folder` (examples/ is not a package), or None with why not."""
    spec = APPLICATIONS[application]
    path = folder / f"{spec.example}.py"
    if not path.exists():
        return None, f"{path} does not exist"
    loaded = importlib.util.spec_from_file_location(f"autosparse_example_{spec.example}", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return getattr(module, spec.function), None


class KernelCalls:
    """Counts the autosparse kernel calls made while it is entered: Kernel's two public ways to run, and the
    kernels a fused step runs together in one native call (runtime/sequence.py)."""

    def __enter__(self):
        self.count, self.saved = 0, (asp.Kernel.__call__, asp.Kernel.compute, sequence.run_sequence)

        def counted(method):
            def call(kernel, /, **operands):
                self.count += 1
                return method(kernel, **operands)
            return call

        def run_sequence(calls):
            self.count += len(calls)
            return self.saved[2](calls)

        asp.Kernel.__call__, asp.Kernel.compute = counted(self.saved[0]), counted(self.saved[1])
        sequence.run_sequence = run_sequence
        return self

    def __exit__(self, *exc) -> None:
        asp.Kernel.__call__, asp.Kernel.compute, sequence.run_sequence = self.saved


@dataclass
class Outcome:
    timing: Timing
    first: float | None = None  # the first call's seconds (compilation included)
    calls: int | None = None  # autosparse kernel calls in the first run
    steps: int | None = None


def measure(contenders: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]], repeat: int,
            budget: float) -> dict[str, Outcome]:
    """Each contender's first call timed, counted and checked, then a warm call, then `repeat` interleaved
    samples (timing.interleaved). A contender whose first call exceeds `budget` is timed by that call alone
    (compilation included, runs 1: eager CP-ALS on med.tns takes minutes a call), one whose warm call
    exceeds it by the warm call alone."""
    outcomes, batches = {}, {}
    for name, (call, check) in contenders.items():
        outcome = outcomes[name] = Outcome(Timing())
        try:
            with KernelCalls() as calls:
                start = time.perf_counter()
                result = call()
                outcome.first = time.perf_counter() - start
            outcome.calls = calls.count
            check(result)
        except Exception as error:  # noqa: BLE001 - a contender that fails is reported, and the suite goes on
            outcome.timing.status = "WRONG" if isinstance(error, Mismatch) else "ERROR"
            outcome.timing.detail = f"{type(error).__name__}: {error}"
            continue
        finally:
            result = None
        if outcome.first > budget:
            outcome.timing.seconds, outcome.timing.runs = outcome.first, 1
            continue
        once = seconds_of(call)
        if once > budget:
            outcome.timing.seconds, outcome.timing.runs = once, 1
        else:
            batches[name] = batch_for(once)
    for name, taken in interleaved({n: contenders[n][0] for n in batches}, batches, repeat).items():
        outcomes[name].timing.seconds, outcomes[name].timing.runs = statistics.median(taken), len(taken)
    return outcomes


def run_case(case: Case, function, args) -> dict[str, Outcome]:
    """Ours (eager, lazy) checked against scipy's (numpy's) answer, every peer against ours, all timed together."""
    spec = APPLICATIONS[case.application]
    expected = {}
    reference = next((name for name in ("scipy", "numpy") if name in case.peers), None)
    if reference:
        expected["value"] = case.peers[reference]()

    def ours(lazy: bool):
        return lambda: function(*case.args, **case.options, lazy=lazy)

    def against_reference(name: str):
        def check(result) -> None:
            steps[name] = spec.steps(result, case.args)
            plain = spec.plain(result)
            if expected:
                spec.check(plain, expected["value"])
            expected.setdefault("ours", plain)
        return check

    steps: dict[str, int | None] = {}
    contenders = {name: (ours(name == "lazy"), against_reference(name)) for name in ("lazy", "eager")}
    # every peer against ours; against the reference's answer where ours failed, so that the peers are still timed
    contenders.update({name: (call, lambda result: spec.check(result, expected.get("ours", expected.get("value"))))
                       for name, call in case.peers.items()})
    outcomes = measure(contenders, args.repeat, args.budget)
    for name, taken in steps.items():
        outcomes[name].steps = taken
    if "ours" in expected and args.finch_python:
        outcomes["finch"] = finch(case, expected["ours"], args)
    return outcomes


def finch(case: Case, ours, args) -> Outcome:
    """finch-tensor-lite's run of the case in its own interpreter, checked against ours."""
    operands = finch_operands(case, args.finch_dense)
    if isinstance(operands, str):
        return Outcome(Timing(status="n/a", detail=operands))
    ran = peers_finch.run(args.finch_python, case.application, operands, args.repeat, args.finch_budget)
    if ran.error:
        return Outcome(Timing(status="n/a", detail=ran.error))
    try:
        APPLICATIONS[case.application].check(ran.result, ours)
    except Mismatch as error:
        return Outcome(Timing(status="WRONG", detail=str(error)), ran.first)
    return Outcome(Timing(statistics.median(ran.steady), len(ran.steady)), ran.first)


def finch_operands(case: Case, limit: int) -> dict[str, np.ndarray] | str:
    """The dense operands finch's program of the case takes, or why finch does not run it (a dense copy
    over `limit` entries: finch's dense products are cubic loops, minutes past a few thousand rows)."""
    if case.application not in peers_finch.PROGRAMS:
        return f"no program for {case.application}: {peers_finch.ABSENT[case.application]}"
    matrix = case.args[0]
    if matrix.shape[0] * matrix.shape[1] > limit:
        return f"a dense {matrix.shape[0]:,}×{matrix.shape[1]:,} copy is over {limit:,} entries"
    if case.application == "pagerank":
        out_degree = np.asarray(matrix.sum(axis=1)).ravel()
        scale = np.divide(1.0, out_degree, out=np.zeros(len(out_degree)), where=out_degree != 0)
        return {"transition": DAMPING * (matrix.T @ sp.diags_array(scale)).toarray(),
                "dangling": out_degree == 0, "damping": np.array(DAMPING),
                "steps": np.array(case.options["max_iterations"])}
    if case.application == "triangles":
        return {"lower": lower_pattern(matrix).toarray()}
    if case.application == "cg":
        return {"matrix": matrix.toarray(), "rhs": case.args[1], "steps": np.array(case.options["max_iterations"])}
    return {"adjacency": matrix.toarray(), "scale": gcn_scale(matrix.sum(axis=1)), "features": case.args[1],
            "weight": case.args[2]}




def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", nargs="+", choices=list(APPLICATIONS), default=list(APPLICATIONS))
    parser.add_argument("--data", nargs="+", help="shipped inputs by name, instead of each application's own")
    parser.add_argument("--quick", action="store_true", help="small generated inputs (CI)")
    parser.add_argument("--examples", default=str(EXAMPLES), help="the folder of the example programs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="PageRank and CG iterations, CP-ALS sweeps")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--budget", type=float, default=10.0,
                        help="a contender whose first (else warm) run takes longer is timed by that run alone")
    parser.add_argument("--finch-python", default=peers_finch.default_python(),
                        help="the Python with finch-tensor-lite (none: leave finch out)")
    parser.add_argument("--finch-budget", type=float, default=300.0, help="seconds finch may take an application")
    parser.add_argument("--finch-dense", type=int, default=FINCH_DENSE, help="entries of finch's largest dense copy")
    add_option(parser)
    return parser


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:,.4g}"


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.finch_python in ("", "none"):
        args.finch_python = None
    if args.quick:
        args.steps = min(args.steps, 5)
    asp.set_num_threads(1)
    # a cache of compiled kernels of its own, so that the first calls pay for compilation as a user's first run
    os.environ["AUTOSPARSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="autosparse-bench-apps-")
    atexit.register(shutil.rmtree, os.environ["AUTOSPARSE_CACHE_DIR"], True)
    gb, gb_note = load_graphblas(1)
    records = Records(args.json)
    notes = [n for n in (gb_note,) if n]
    if args.finch_python:
        notes.append(peers_finch.probe(args.finch_python))
    print(f"# autosparse bench applications\n\n`autosparse bench applications {shlex.join(argv or sys.argv[1:])}`"
          f" — {machine.describe()}\n", flush=True)
    print("| application | data | nnz | contender | first call ms | ms | runs | kernel calls / step | "
          "time / lazy | status |\n|---|---|---:|---|---:|---:|---:|---|---:|---|", flush=True)
    functions: dict[str, tuple] = {}
    failed = False
    for application, dataset, made in machine.progress(inputs(args), "inputs"):
        if application not in functions:
            functions[application] = example_function(application, Path(args.examples))
        function, missing = functions[application]
        if function is None:
            if f"{application}: n/a, {missing}" not in notes:
                notes.append(f"{application}: n/a, {missing}")
            continue
        case = make_case(application, dataset, made, args, gb)
        outcomes = run_case(case, function, args)
        lazy = outcomes["lazy"].timing.seconds
        for name, outcome in outcomes.items():
            timing = outcome.timing
            role = {"lazy": "ours", "eager": "variant"}.get(name, "peer")
            contender = f"autosparse {name}" if role != "peer" else name
            calls = None if role == "peer" else outcome.calls
            per_step = "" if calls is None else f"{calls}" if not outcome.steps else f"{calls / outcome.steps:.3g}"
            share = f"{timing.seconds / lazy:.2f}×" if timing.seconds is not None and lazy else "—"
            print(f"| {application} | {dataset} | {case.nnz:,} | {contender} | {ms(outcome.first)} | "
                  f"{ms(timing.seconds)} | {timing.runs} | {per_step} | {share} | {timing.status or 'ok'} |",
                  flush=True)
            records.timing(application, dataset, contender, timing.seconds, role=role, status=timing.status,
                           detail=timing.detail, first=outcome.first, calls=calls, steps=outcome.steps,
                           nnz=case.nnz, runs=timing.runs)
            if timing.status:
                failed |= role != "peer"  # a wrong or broken peer is reported; a failing autosparse fails the run
                notes.append(f"{contender} on {application}, {dataset}: {timing.status}, {timing.detail}")
    if notes:
        print("\nNotes:\n" + "\n".join(f"- {n}" for n in notes), flush=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
