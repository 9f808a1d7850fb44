"""`autosparse bench applications`: the examples eager and lazy beside their peers, every contender's result
checked before it is timed (a wrong peer reported, never timed), the records the report's tables are built
from, and finch-tensor-lite run in its own interpreter or reported n/a with why. No time is asserted on."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

from autosparse_bench import applications, command, peers_finch, records, report
from autosparse_bench.timing import Mismatch

pytest.importorskip("graphblas")  # the `bench` extra: every application has a GraphBLAS or numpy peer

PEERS = {"pagerank": {"scipy", "GraphBLAS"}, "bfs": {"scipy", "GraphBLAS"}, "sssp": {"scipy", "GraphBLAS"},
         "triangles": {"scipy", "GraphBLAS"}, "cg": {"scipy", "GraphBLAS"}, "cp_als": {"numpy"},
         "gcn": {"scipy", "GraphBLAS"}}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_BENCH_DATA", str(tmp_path / "bench-data"))


def run_suite(tmp_path, *options: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    found = tmp_path / "applications.jsonl"
    argv, environment = command("applications", ["--quick", "--repeat", "1", "--steps", "3", *options,
                                                 "--json", str(found)])
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=600, check=False)
    return done, records.read(found)


def test_the_quick_suite_checks_every_contender_of_every_application_and_the_report_shows_them(tmp_path):
    done, measured = run_suite(tmp_path, "--finch-python", "none")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    by_application: dict[str, dict[str, dict]] = {}
    for record in measured:
        by_application.setdefault(record["kernel"], {})[record["contender"]] = record
    assert set(by_application) == set(applications.APPLICATIONS)
    for application, contenders in by_application.items():
        assert set(contenders) == {"autosparse lazy", "autosparse eager", *PEERS[application]}, application
        for record in contenders.values():
            assert record["status"] == "" and record["seconds"] > 0 and record["first"] > 0, (application, record)
            assert (record["calls"] is None) == (record["role"] == "peer"), record
        # fusion: the lazy program calls no more kernels than the eager one, and fewer where it fuses anything
        assert contenders["autosparse lazy"]["calls"] <= contenders["autosparse eager"]["calls"], application
    assert by_application["pagerank"]["autosparse lazy"]["steps"] == 3  # the fixed iteration count held

    (tmp_path / "applications.run.json").write_text(json.dumps(
        {"command": "autosparse bench applications --quick", "commit": "test", "generated": "now", "minutes": 1,
         "exit": 0, "machine": "test"}))
    text = report.assemble(tmp_path)
    section = text[text.index("## applications"):]
    for application in applications.APPLICATIONS:
        assert f"### {application}\n" in section
    assert "| data | nnz | eager ms | lazy ms | lazy / eager | kernel calls / step, eager → lazy |" in section
    assert "| generated | " in section and "GraphBLAS / lazy" in section and "numpy / lazy" in section
    assert "Why autosparse loses" not in section  # no causes file beside this run
    (tmp_path / "applications-causes.md").write_text("Planning costs.")
    assert "Planning costs." in report.assemble(tmp_path)


def test_every_peer_is_checked_against_ours_and_a_wrong_one_is_reported_not_timed():
    outcomes = applications.measure({"right": (lambda: np.array([0, 1, 1]), lambda r: applications.equal(r, [0, 1, 1])),
                                     "wrong": (lambda: np.array([0, 1, 2]), lambda r: applications.equal(r, [0, 1, 1])),
                                     "broken": (lambda: 1 / 0, lambda r: None)}, repeat=2, budget=10.0)
    assert outcomes["right"].timing.status == "" and outcomes["right"].timing.runs == 2
    assert outcomes["wrong"].timing.status == "WRONG" and outcomes["wrong"].timing.seconds is None
    assert "1 entries differ" in outcomes["wrong"].timing.detail
    assert outcomes["broken"].timing.status == "ERROR" and "ZeroDivisionError" in outcomes["broken"].timing.detail


def test_a_contender_whose_first_call_is_over_budget_is_timed_by_it_alone():
    calls = []
    outcomes = applications.measure({"slow": (lambda: calls.append(1), lambda r: None)}, repeat=3, budget=-1.0)
    assert calls == [1] and outcomes["slow"].timing.runs == 1
    assert outcomes["slow"].timing.seconds == outcomes["slow"].first


@pytest.mark.parametrize("got, expected, fails", [
    ([1.0, np.inf], [1.0, np.inf], False), ([1.0, 5.0], [1.0, np.inf], True), ([1.0 + 1e-13], [1.0], False),
    ([1.1], [1.0], True), ([1.0, 2.0], [1.0], True), ([], [], False), ([np.nan, 1.0], [np.nan, 1.0], False),
    ([1.0, 1.0], [np.nan, 1.0], True)])
def test_the_close_check_matches_infinities_and_nans_exactly_and_the_rest_by_relative_error(got, expected, fails):
    check = applications.close(1e-9)
    if fails:
        with pytest.raises(Mismatch):
            check(got, expected)
    else:
        check(got, expected)


def test_the_peers_agree_with_scipy_on_a_graph_with_an_isolated_and_a_dangling_vertex():
    """Vertex 3 has no out-links (PageRank's dangling case), vertex 4 no links at all (BFS's and SSSP's
    unreachable one): GraphBLAS's programs give scipy's answers, and both the answers worked out by hand."""
    gb, _ = applications.load_graphblas(1)
    graph = sp.csr_array((np.array([2.0, 1.0, 3.0, 4.0, 1.5]), (np.array([0, 0, 1, 1, 2]), np.array([1, 2, 2, 3, 0]))),
                         shape=(5, 5))  # one triangle, 0-1-2
    applications.close(1e-12)(applications.graphblas_pagerank(gb, graph, 7), applications.scipy_pagerank(graph, 7))
    applications.equal(applications.graphblas_bfs(gb, graph, 0), [0, 1, 1, 2, -1])
    applications.equal(applications.scipy_bfs(graph, 0), [0, 1, 1, 2, -1])
    applications.close(1e-12)(applications.graphblas_sssp(gb, graph, 0), [0.0, 2.0, 1.0, 6.0, np.inf])
    applications.close(1e-12)(applications.scipy_sssp(graph, 0), [0.0, 2.0, 1.0, 6.0, np.inf])
    assert applications.scipy_triangles(graph) == applications.graphblas_triangles(gb, graph) == 1
    matrix = applications.spd(graph)
    rhs = np.arange(5.0)
    applications.close(1e-9)(applications.graphblas_cg(gb, matrix, rhs, 5), np.linalg.solve(matrix.toarray(), rhs))
    features, weight = np.ones((5, 3)), np.eye(3)
    applications.close(1e-12)(applications.graphblas_gcn(gb, graph, features, weight),
                              applications.scipy_gcn(graph, features, weight))


def test_finch_without_its_interpreter_is_n_a_with_why(tmp_path):
    assert peers_finch.probe(str(tmp_path / "no-python")).startswith("finch: n/a, ")
    ran = peers_finch.run(str(tmp_path / "no-python"), "triangles", {"lower": np.zeros((2, 2))}, 1, 10.0)
    assert ran.result is None and "did not start" in ran.error


@pytest.mark.skipif(peers_finch.default_python() is None, reason="no finch-tensor-lite venv (design31.md §4)")
def test_finch_runs_in_its_own_interpreter_and_its_result_is_checked(tmp_path):
    done, measured = run_suite(tmp_path, "--apps", "triangles", "bfs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finch = {record["kernel"]: record for record in measured if record["contender"] == "finch"}
    assert finch["triangles"]["status"] in ("", "WRONG") and finch["triangles"]["first"] > 0
    assert finch["bfs"]["status"] == "n/a" and "lor_land" in finch["bfs"]["detail"]
    assert "a CSR product from its level fields" in done.stdout
