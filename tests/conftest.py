"""Shared helpers: the format grid, reference tensors built independently of autosparse, comparisons."""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest

import autosparse as asp
from autosparse.pipeline import kernel as pipeline_kernel

VALUE_DTYPES = (np.float64, np.float32, np.int64, np.complex128)
INDEX_DTYPES = (np.int32, np.int64)


def coo_letters(order: int) -> str:
    return "u" if order == 1 else "u" + "c" * (order - 2) + "q"


def format_grid() -> list[str]:
    """Every format of orders 1-4 built from d/s/h plus COO, in every mode ordering for orders <= 3."""
    specs = []
    for order in range(1, 5):
        letter_sets = ["".join(p) for p in itertools.product("dsh", repeat=order)] + [coo_letters(order)]
        orderings = list(itertools.permutations(range(order))) if order <= 3 else [tuple(range(order))]
        for letters in letter_sets:
            for modes in orderings:
                if modes == tuple(range(order)):
                    specs.append(letters)
                else:
                    specs.append("".join(f"{l}{m}" for l, m in zip(letters, modes)))
    return specs


def reference_dense(coords, values, shape, dtype) -> np.ndarray:
    """The dense tensor that (coords, values) describe, duplicates summed — plain numpy."""
    dense = np.zeros(shape, dtype=dtype)
    if not shape:
        dense[()] = np.sum(values, dtype=dtype)
    elif len(values):
        np.add.at(dense, tuple(np.asarray(coords)), values)
    return dense


def densified(value) -> np.ndarray:
    """A result as a numpy array, whatever it is (a sparse or dense Tensor, an array, a number): a sparse
    Tensor is never densified implicitly, so tests that compare with numpy say so here."""
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def make_values(rng: np.random.Generator, count: int, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(1, 9, size=count).astype(dtype)
    if dtype.kind == "c":
        return (rng.integers(1, 9, size=count) + 1j * rng.integers(-4, 4, size=count)).astype(dtype)
    return (rng.integers(1, 64, size=count) / 8).astype(dtype)


def special_tensors(order: int, dtype, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, tuple[int, ...]]]:
    """(coords, values, shape) for the cases every format must survive."""
    rng = np.random.default_rng(seed)
    rect = tuple(range(2, 2 + order))  # rectangular: 2 x 3 x 4 x 5
    none = np.zeros((order, 0), dtype=np.int64)

    def random_coords(shape, count):
        return np.vstack([rng.integers(0, d, size=count) for d in shape]) if count else none

    cases = {
        "empty": (none, make_values(rng, 0, dtype), rect),
        "zero-size": (none, make_values(rng, 0, dtype), (0,) + rect[1:]),
        "all-zero": (random_coords(rect, 3), np.zeros(3, dtype=dtype), rect),
        "one-entry": (np.array([[d - 1] for d in rect]), make_values(rng, 1, dtype), rect),
        "size-1": (np.zeros((order, 1), dtype=np.int64), make_values(rng, 1, dtype), (1,) * order),
        "random": (random_coords(rect, 2 * sum(rect)), make_values(rng, 2 * sum(rect), dtype), rect),
    }
    coords, values, shape = cases["random"]
    values = values.copy()
    values[::5] = 0  # explicit zeros among nonzeros (and duplicates, which add up)
    cases["explicit-zero"] = (coords, values, shape)
    return cases


def edge_matrix(case: str, rng) -> tuple[np.ndarray, "asp.Tensor"]:
    """A sparse matrix for an edge `case` ("random", "empty", "single", "non-square", "size-1",
    "explicit-zero"): its dense values and the tensor (stored "ds")."""
    shape = {"non-square": (7, 3), "size-1": (1, 1)}.get(case, (6, 5))
    dense = rng.random(shape) * (rng.random(shape) < 0.3)
    if case in ("empty", "single", "explicit-zero"):
        dense[:] = 0
    if case == "single":
        dense[2, 3] = 1.5
    if case == "explicit-zero":  # a stored 0.0 beside two nonzeros
        dense[1, 0], dense[4, 4] = 2.0, 3.0
        return dense, asp.Tensor.from_coo(np.array([[0, 1, 4], [2, 0, 4]]), np.array([0.0, 2.0, 3.0]), shape,
                                          format="ds")
    return dense, asp.Tensor.from_numpy(dense, format="ds")


def assert_same_tensor(a: asp.Tensor, b: asp.Tensor) -> None:
    """Identical storage: shape, format, dtypes, every level array and the values."""
    assert a.shape == b.shape
    assert a.format == b.format, (a.format, b.format)
    assert a.dtype == b.dtype
    assert a.index_dtype == b.index_dtype
    for level_a, level_b in zip(a.levels, b.levels):
        assert level_a.keys() == level_b.keys()
        for name in level_a:
            np.testing.assert_array_equal(level_a[name], level_b[name], err_msg=name)
    np.testing.assert_array_equal(a.vals, b.vals)


@pytest.fixture(autouse=True)
def _generous_memory_limit():
    yield
    asp.set_memory_limit(None)


@pytest.fixture
def unfused():
    """Kernels built without floating-point contraction, for tests that compare a kernel's sums bit for bit
    with the plain loop's order of additions: with contraction on, the compiler fuses multiply-adds where
    it chooses, and the order is no longer all that decides the bits."""
    asp.set_fp_contract(False)
    yield
    asp.set_fp_contract(None)


@pytest.fixture(autouse=True, scope="session")
def _threads_on_small_operands():
    """Tests' operands are small: the default schedule's threads run on them anyway, so its parallel code
    is what the differential grids check (tests/test_threads.py checks the threshold itself)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 0)
        yield


@pytest.fixture(autouse=True, scope="session")
def _own_cache_directory(tmp_path_factory):
    """Tests use their own cache directory, never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOSPARSE_CACHE_DIR", str(tmp_path_factory.mktemp("autosparse-cache")))
        yield


@pytest.fixture(scope="module")
def frozen_heap():
    """What earlier modules left alive (cached autoscheduler fronts hold millions of objects) kept out of
    the cyclic collector's sight for a module whose code collects often: the benchmark harness collects
    before every timed round, and in a whole session each such collection walked all of it (seconds a
    round, for tests whose own calls take milliseconds). Objects are still freed by their reference counts;
    cycles among the frozen ones go to the next full collection after the module."""
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def sequences(monkeypatch):
    """The kernels each native call of a fused run ran together (runtime/sequence.py), in order."""
    from autosparse.runtime import sequence
    runs, original = [], sequence.run_sequence
    monkeypatch.setattr(sequence, "run_sequence", lambda calls: runs.append(len(calls)) or original(calls))
    return runs
