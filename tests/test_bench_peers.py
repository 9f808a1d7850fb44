"""GraphBLAS and MKL as peers of the benchmark suites: each of their calls gives scipy's answer on small
inputs (empty, single-entry, non-square), their thread counts are held, a missing library is reported
as n/a rather than stopping a suite, and every table names the fastest peer."""

from __future__ import annotations

import builtins
import sys

import numpy as np
import pytest

from autosparse_bench import data

pytest.importorskip("tensora")  # the `bench` extra: the kernels suite imports Tensora
gb = pytest.importorskip("graphblas")
mkl = pytest.importorskip("sparse_dot_mkl")
pytestmark = pytest.mark.usefixtures("frozen_heap")  # the harness collects before each timed round

from autosparse_bench import kernels, parallel_kernels, report  # noqa: E402
from autosparse_bench.timing import Mismatch, Timing, fastest  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_BENCH_DATA", str(tmp_path / "bench-data"))


@pytest.fixture(scope="module")
def ref():
    return kernels.Reference()


@pytest.fixture(scope="module")
def loaded():
    (library, why), (graphblas, because) = kernels.load_mkl(), kernels.load_graphblas()
    assert why is None and because is None
    return library, graphblas


def matrices():
    """Square (for SpGEMM's A·A and the element-wise A, Aᵀ) and non-square, empty, single-entry."""
    single = data.canonical(data.uniform(5, 5, 1, seed=3))
    return {"uniform": data.uniform(40, 40, 300, seed=1), "power-law": data.generate("rmat", 6, seed=2),
            "non-square": data.uniform(30, 20, 100, seed=4), "empty": data.uniform(8, 8, 0, seed=5),
            "single entry": single}


def library_peers(case: kernels.Case) -> list[kernels.Peer]:
    return [peer for peer in case.peers if peer.name.startswith(("GraphBLAS", "MKL"))]


def cases(name: str, m, loaded, ref) -> list[kernels.Case]:
    library, graphblas = loaded
    rng = np.random.default_rng(0)
    made = [kernels.spmv_case(name, m, rng, library, graphblas, ref),
            kernels.spmv_case(name, m, rng, library, graphblas, ref, shifted=True),
            kernels.spmspv_case(name, m, rng, library, graphblas, ref),
            kernels.spmspv_case(name, m, rng, library, graphblas, ref, by_column=True),
            kernels.spgemm_case(name, m, data.canonical(m.T), rng, library, graphblas, ref),
            kernels.spgemm_case(name, m, data.canonical(m.T), rng, library, graphblas, ref, sorted_rows=True),
            kernels.spmm_case(name, m, 4, rng, library, graphblas, ref),
            kernels.sddmm_case(name, m, 3, rng, graphblas, ref)]
    if m.shape[0] == m.shape[1]:
        made += [kernels.elementwise_case(kernel, name, m, data.canonical(m.T), graphblas)
                 for kernel in ("Add", "Multiply")]
    return made


@pytest.mark.parametrize("name", list(matrices()))
def test_every_graphblas_and_mkl_peer_gives_scipys_answer(name, loaded, ref):
    """Each peer's result passes its case's check (against scipy on the same data), kernel by kernel."""
    seen = set()
    for case in cases(name, matrices()[name], loaded, ref):
        for peer in library_peers(case):
            assert peer.call is not None, peer.note
            peer.check(peer.call())
            seen.add((case.kernel, peer.name))
    assert {kernel for kernel, peer in seen if peer.startswith("GraphBLAS")} >= \
        {"SpMV", "SpMV + z", "SpMSpV", "SpMSpV CSC", "SpGEMM", "SpMM", "SDDMM"}
    assert {kernel for kernel, peer in seen if peer.startswith("MKL")} == {"SpMV", "SpMV + z", "SpGEMM",
                                                                           "SpGEMM sorted", "SpMM"}
    assert ("SpGEMM sorted", "GraphBLAS A.mxm(B) to sorted scipy") in seen


def test_the_graphblas_elementwise_peers_compute_a_sum_and_a_product(loaded, ref):
    m = matrices()["uniform"]
    add, multiply = (kernels.elementwise_case(kernel, "uniform", m, data.canonical(m.T), loaded[1])
                     for kernel in ("Add", "Multiply"))
    assert [peer.name for peer in library_peers(add)] == ["GraphBLAS A.ewise_add(B)"]
    total, product = library_peers(add)[0].call(), library_peers(multiply)[0].call()
    np.testing.assert_allclose(kernels.graphblas_plain(loaded[1], total).toarray(), (m + m.T).toarray())
    np.testing.assert_allclose(kernels.graphblas_plain(loaded[1], product).toarray(), m.multiply(m.T).toarray())


def test_a_graphblas_result_that_differs_fails_its_check(loaded, ref):
    """The check converts GraphBLAS's own object: a wrong one is caught, not waved through."""
    m = matrices()["uniform"]
    case = kernels.spmv_case("uniform", m, np.random.default_rng(0), *loaded, ref)
    peer = next(p for p in case.peers if p.name == "GraphBLAS A.mxv(x)")
    wrong = peer.call().apply(loaded[1].binary.plus, right=1.0).new()
    with pytest.raises(Mismatch):
        peer.check(wrong)


def test_the_peers_run_the_thread_count_asked_for(loaded):
    library, graphblas = loaded
    try:
        assert kernels.load_graphblas(2)[0] is graphblas and graphblas.ss.config["nthreads"] == 2
        assert kernels.load_mkl(2)[0] is library and library.mkl_get_max_threads() == 2
    finally:
        kernels.load_graphblas(1), kernels.load_mkl(1)
    assert graphblas.ss.config["nthreads"] == 1 and library.mkl_get_max_threads() == 1


def hide(monkeypatch, module: str) -> None:
    """Make `import module` fail as it does where the library is not installed."""
    real = builtins.__import__

    def refusing(name, *args, **kwargs):
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {module!r}")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", refusing)
    monkeypatch.delitem(sys.modules, module, raising=False)


@pytest.mark.parametrize("load, module, named", [(kernels.load_graphblas, "graphblas", "GraphBLAS"),
                                                 (kernels.load_mkl, "sparse_dot_mkl", "MKL")])
def test_a_missing_peer_is_n_a_with_why(load, module, named, monkeypatch):
    hide(monkeypatch, module)
    library, why = load()
    assert library is None and why.startswith(f"{named}: n/a") and "pip install" in why


def test_a_case_without_the_libraries_reports_their_peers_n_a_and_times_the_rest(ref):
    m = matrices()["uniform"]
    case = kernels.spgemm_case("uniform", m, m, np.random.default_rng(0), None, None, ref, sorted_rows=True)
    missing = library_peers(case)
    assert [p.name for p in missing] == ["MKL (sparse_dot_mkl)", "GraphBLAS A.mxm(B) to sorted scipy"]
    assert all(p.call is None and "n/a" in p.note for p in missing)
    args = type("Args", (), {"budget": 10.0, "min_sample": 0.001, "threads": 1, "repeat": 1})()
    ours, peers = kernels.run_case(case, args, {})
    assert ours.status == "" and all(peers[p.name].status == "n/a" for p in missing)
    assert peers["scipy A @ B + sort_indices"].status == "" and peers["scipy A @ B + sort_indices"].runs == 1


def test_fastest_picks_the_least_time_and_skips_the_untimed():
    assert fastest({"slow": 2.0, "failed": None, "quick": 1.0, "slower": 3.0}) == ("quick", 1.0)
    assert fastest({"failed": None}) is None and fastest({}) is None


def test_the_kernels_fastest_peer_row_ignores_failed_peers_and_our_own_spellings(ref):
    m = matrices()["uniform"]
    case = kernels.spmv_case("uniform", m, np.random.default_rng(0), None, None, ref)
    peers = {p.name: Timing(status="n/a") for p in case.peers}
    peers.update({"scipy A @ x": Timing(2e-3, 5), "C reference": Timing(1.5e-3, 5),
                  "numpy (bincount over entries)": Timing(None, 0, "WRONG"),
                  "autosparse A @ x": Timing(0.1e-3, 5)})
    row = kernels.fastest_peer_row(case, Timing(1e-3, 5), peers)
    assert row == "| uniform | SpMV | 1.00 | C reference | 1.50 | 1.50× |"
    none = kernels.fastest_peer_row(case, Timing(1e-3, 5), {p.name: Timing(status="n/a") for p in case.peers})
    assert "none timed" in none


def test_the_scaling_fastest_peer_is_a_peer_at_that_thread_count():
    contenders = {name: (threads, None, None) for name, threads in (
        ("autosparse 1", 1), ("autosparse 2", 2), ("row split 2", 2), ("scipy A @ x", 1), ("MKL 1", 1),
        ("MKL 2", 2), ("GraphBLAS 2", 2), ("copy of the same bytes 2", 2))}
    medians = {"autosparse 1": 5.0, "autosparse 2": 3.0, "row split 2": 0.1, "scipy A @ x": 4.0, "MKL 1": 4.5,
               "MKL 2": 2.5, "GraphBLAS 2": 2.0, "copy of the same bytes 2": 0.5}
    assert parallel_kernels.fastest_peer(medians, contenders, 1) == ("scipy A @ x", 4.0)
    assert parallel_kernels.fastest_peer(medians, contenders, 2) == ("GraphBLAS 2", 2.0)
    assert parallel_kernels.contender_role("autosparse 1", 2) == "variant"


def _timing(kernel, dataset, contender, seconds, role="peer"):
    return {"kind": "timing", "kernel": kernel, "dataset": dataset, "contender": contender, "seconds": seconds,
            "role": role, "status": "" if seconds else "WRONG", "nnz": 10}


def test_the_report_names_the_fastest_peer_per_case_and_sums_it_up(tmp_path):
    records = [_timing("SpGEMM", "a", "autosparse", 2e-3, "ours"), _timing("SpGEMM", "a", "scipy A @ B", 3e-3),
               _timing("SpGEMM", "a", "GraphBLAS A.mxm(B)", 1e-3), _timing("SpGEMM", "a", "MKL (sparse_dot_mkl)", None),
               _timing("SpGEMM", "a", "autosparse A @ B", 0.5e-3, "variant"),
               _timing("SpMV", "b", "autosparse", 1e-3, "ours"), _timing("SpMV", "b", "scipy A @ x", 1.2e-3),
               _timing("SpMV", "c", "autosparse", 1e-3, "ours"), _timing("SpMV", "c", "scipy A @ x", 1.6e-3)]
    groups = report._groups("kernels", records)
    text = "\n".join(report._timing_section("kernels", groups, tmp_path))
    assert "| a | 10 | 2 | GraphBLAS A.mxm(B) | 0.50× | 1.50× | 0.50× | WRONG |" in text  # GraphBLAS its own family
    assert "| b | 10 | 1 | scipy A @ x | 1.20× | 1.20× |" in text
    line = report._summary_line("kernels", groups)
    assert "fastest peer / ours: median 1.20× over 3, worst 0.50× (GraphBLAS A.mxm(B) on SpGEMM, a)" in line


def test_the_call_overhead_is_measured_checked_and_recorded(tmp_path):
    from autosparse_bench.records import Records, read

    overhead = kernels.call_overhead(repeat=1, calls=3)
    assert set(overhead) == set(kernels.OVERHEAD_ROLES) and all(s > 0 for s in overhead.values())
    records = Records(str(tmp_path / "r.jsonl"))
    table = kernels.overhead_table({"autosparse compiled kernel": 3e-6, "autosparse evaluate": 9e-6,
                                    "autosparse A @ x": 12e-6, "scipy A @ x": 2e-6,
                                    "C reference through ctypes": 1e-6}, records)
    assert "| warm SpMV on 1,000 nonzeros (100×100) | µs per call |" in table
    assert "| autosparse compiled kernel | 3.00 | 1.50× |" in table and "| scipy A @ x | 2.00 | 1.00× |" in table
    taken = read(tmp_path / "r.jsonl")
    assert [r["role"] for r in taken].count("ours") == 1
    assert {r["kernel"] for r in taken} == {"per-call overhead"} and {r["nnz"] for r in taken} == {1_000}
