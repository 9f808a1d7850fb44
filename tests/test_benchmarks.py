"""The benchmark suites' data and their one command: generators that draw what they promise, the disk
cache, file loaders, and `autosparse bench kernels --quick` agreeing with every peer (the CI run)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import autosparse as asp
from autosparse.benchmarks import data

pytest.importorskip("tensora")  # the `bench` extra: the kernels suite times Tensora too


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_BENCH_DATA", str(tmp_path / "bench-data"))


def test_uniform_matrices_hold_exactly_the_entries_asked_for_and_repeat_by_seed():
    m = data.uniform(300, 200, 5000, seed=3)
    assert m.shape == (300, 200) and m.nnz == 5000 and m.has_canonical_format
    assert m.indices.dtype == np.int32 and np.all(m.data >= 0.5)
    assert (data.uniform(300, 200, 5000, seed=3) != m).nnz == 0
    assert (data.uniform(300, 200, 5000, seed=4) != m).nnz > 0


def test_rmat_degrees_follow_a_power_law():
    """Graph500's skew: the busiest rows hold many times the mean, unlike a uniform matrix's."""
    m = data.rmat(12, seed=1)
    degrees = np.diff(m.indptr)
    assert m.shape == (4096, 4096) and 0.8 * 16 * 4096 < m.nnz <= 16 * 4096
    assert degrees.max() > 20 * degrees.mean()
    uniform = np.diff(data.uniform(4096, 4096, m.nnz, seed=1).indptr)
    assert uniform.max() < 4 * uniform.mean()


def test_banded_matrices_fill_their_band_and_nothing_else():
    m = data.banded(50, bandwidth=3)
    rows, cols = m.nonzero()
    assert np.all(np.abs(rows - cols) <= 3)
    assert m.nnz == sum(50 - abs(k) for k in range(-3, 4))


@pytest.mark.parametrize("sides, per_row", [((6, 7), 5), ((4, 5, 3), 7)])
def test_stencils_are_the_grid_laplacian(sides, per_row):
    """Interior rows hold 2·dims + 1 entries and sum to zero; the matrix is symmetric, diagonal 2·dims."""
    m = data.stencil(*sides)
    n = int(np.prod(sides))
    assert m.shape == (n, n) and (m != m.T).nnz == 0
    assert np.all(m.diagonal() == 2 * len(sides))
    counts, sums = np.diff(m.indptr), np.asarray(m.sum(axis=1)).ravel()
    assert counts.max() == per_row and np.all(sums[counts == per_row] == 0)
    inner = int(np.prod([s - 2 for s in sides]))
    assert np.count_nonzero(counts == per_row) == inner


def test_powerlaw_tensors_crowd_a_few_slices():
    shape = (200, 150, 100)
    skewed, flat = data.powerlaw_tensor(shape, 20_000, seed=2), data.uniform_tensor(shape, 20_000, seed=2)
    for t in (skewed, flat):
        assert t.coords.shape == (3, t.nnz) and t.coords.dtype == np.int64
        keys = np.ravel_multi_index(tuple(t.coords), shape)
        assert np.all(np.diff(keys) > 0)  # sorted and unique
        assert all(np.all((0 <= t.coords[k]) & (t.coords[k] < shape[k])) for k in range(3))
    assert flat.nnz == 20_000 and skewed.nnz < 20_000  # duplicates summed
    share = lambda t: np.bincount(t.coords[0], minlength=shape[0]).max() / t.nnz
    assert share(skewed) > 5 * share(flat)
    assert data.powerlaw_tensor((4, 5, 6, 7), 300, seed=1).coords.shape[0] == 4


def test_generated_inputs_are_cached_on_disk_and_redrawn_when_damaged(tmp_path):
    first = data.generate("rmat", 8, seed=5)
    files = list((tmp_path / "bench-data").glob("rmat-*.npz"))
    assert len(files) == 1
    again = data.generate("rmat", 8, seed=5)
    assert (again != first).nnz == 0
    files[0].write_bytes(b"cut short")
    assert (data.generate("rmat", 8, seed=5) != first).nnz == 0
    tensor = data.generate("powerlaw_tensor", (20, 30, 40), 500, seed=1)
    cached = data.generate("powerlaw_tensor", (20, 30, 40), 500, seed=1)
    assert np.array_equal(tensor.coords, cached.coords) and np.array_equal(tensor.vals, cached.vals)
    assert cached.shape == (20, 30, 40)


def test_files_load_from_any_path(tmp_path):
    m = data.uniform(30, 40, 100, seed=1)
    asp.write(tmp_path / "m.mtx.gz", asp.Tensor.from_scipy(m))
    assert (data.load_matrix(tmp_path / "m.mtx.gz") != m).nnz == 0
    t = data.uniform_tensor((5, 6, 7), 50, seed=1)
    asp.write(tmp_path / "t.tns", asp.Tensor.from_coo(t.coords, t.vals, t.shape, format="coo"))
    loaded = data.load_tensor(tmp_path / "t.tns")
    assert np.array_equal(loaded.coords, t.coords) and np.allclose(loaded.vals, t.vals)
    assert data.name_of(tmp_path / "m.mtx.gz") == "m"


def test_a_peer_that_disagrees_is_reported_wrong_and_never_timed():
    from autosparse.benchmarks import kernels

    m = data.uniform(40, 40, 200, seed=1)
    x = np.ones(40)
    check = kernels.dense_check(m @ x)
    case = kernels.Case("SpMV", "tiny", "y(i) = A(i,j) * x(j)", {"A": "csr"},
                        {"A": asp.Tensor.from_scipy(m), "x": x}, check,
                        [kernels.Peer("right", lambda: m @ x, check), kernels.Peer("wrong", lambda: m @ x + 1, check),
                         kernels.Peer("broken", lambda: 1 / 0, check)])
    args = type("Args", (), {"budget": 10.0, "min_sample": 0.001, "repeat": 2})()
    ours, peers = kernels.run_case(case, args, {})
    assert ours.status == "" and ours.runs == 2
    assert peers["right"].runs == 2 and peers["wrong"].status == "WRONG" and peers["wrong"].runs == 0
    assert peers["broken"].status == "ERROR"


def test_the_quick_kernels_suite_runs_every_kernel_and_every_peer_agrees():
    """`autosparse bench kernels --quick`: exit status 0 only when no result disagrees with scipy/numpy."""
    from autosparse.benchmarks import kernels

    done = subprocess.run([sys.executable, "-c", "from autosparse.cli import main; main()", "bench", "kernels",
                           "--quick", "--repeat", "2", "--kernel", *(k for k in kernels.KERNELS if k != "compile")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for kernel in ("SpMV", "SpMSpV", "SpGEMM", "SpMM", "SDDMM", "Add", "Multiply", "TTV", "TTM", "MTTKRP"):
        for family in ("uniform", "power-law", "banded", "stencil-2d", "stencil-3d", "uniform 3-D", "power-law 3-D"):
            if (kernel in ("TTV", "TTM", "MTTKRP")) == family.endswith("3-D"):
                assert f"| {family} | {kernel} |" in done.stdout, (family, kernel)
    assert "WRONG" not in done.stdout and "FAIL" not in done.stdout
    assert "| SpMV |" in done.stdout.split("autosparse source")[1]  # the kernels' source hashes


def test_the_report_states_every_loss_with_its_factor(tmp_path):
    from autosparse.benchmarks import report

    records = [{"kernel": "SpMV", "dataset": "uniform", "nnz": 100, "contender": "autosparse", "seconds": 2e-3,
                "status": "", "detail": ""},
               {"kernel": "SpMV", "dataset": "uniform", "nnz": 100, "contender": "scipy A @ x", "seconds": 1e-3,
                "status": "", "detail": ""},
               {"kernel": "SpMV", "dataset": "uniform", "nnz": 100, "contender": "tensora (llvm)", "seconds": 8e-3,
                "status": "", "detail": ""},
               {"kernel": "SpMV", "dataset": "uniform", "nnz": 100, "contender": "tensora (cffi)", "seconds": 4e-3,
                "status": "", "detail": ""},
               {"kernel": "SpMV", "dataset": "uniform", "nnz": 100, "contender": "pydata A @ x", "seconds": None,
                "status": "WRONG", "detail": "values differ"}]
    text = "\n".join(report._kernels_sections(records, tmp_path))
    assert "| SpMV | uniform | 100 | 2.000 | 0.50× | 2.00× |" in text  # scipy, then Tensora's faster backend
    assert "scipy A @ x takes 1.000 ms against autosparse's 2.000 ms — autosparse is 2.00× slower" in text
    assert "pydata" not in text.split("### Where")[0]  # a wrong result is never a time
    assert (tmp_path / "kernels-speedup.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "kernels-runtime.png").read_bytes()[:4] == b"\x89PNG"


def test_autosparse_bench_report_runs_the_suite_and_writes_the_report(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from autosparse.cli import main; main()", "bench", "--report",
                           str(tmp_path / "report"), "kernels", "--quick", "--repeat", "1", "--kernel", "spmv", "ttv",
                           "--matrices", "uniform", "--tensors", "uniform"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = (tmp_path / "report" / "README.md").read_text()
    assert "machine:" in text and "### Where autosparse loses" in text and "--scales 0.125 0.25 0.5 1" in text
    assert "| SpMV | uniform ×0.125 |" in text and "| TTV | uniform 3-D |" in text
    assert {"kernels.md", "kernels.json", "kernels-speedup.png", "kernels-runtime.png"} <= \
        {p.name for p in (tmp_path / "report").iterdir()}
