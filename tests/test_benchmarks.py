"""The benchmark suites' data and their one command: generators that draw what they promise, the disk
cache, file loaders, and `autosparse bench kernels --quick` agreeing with every peer (the CI run)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import autosparse as asp
from autosparse_bench import data

pytest.importorskip("tensora")  # the `bench` extra: the kernels suite times Tensora too
pytestmark = pytest.mark.usefixtures("frozen_heap")  # the harness collects before each timed round


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
    from autosparse_bench import kernels

    m = data.uniform(40, 40, 200, seed=1)
    x = np.ones(40)
    check = kernels.dense_check(m @ x)
    case = kernels.Case("SpMV", "tiny", "y(i) = A(i,j) * x(j)", {"A": "csr"},
                        {"A": asp.Tensor.from_scipy(m), "x": x}, check,
                        [kernels.Peer("right", lambda: m @ x, check), kernels.Peer("wrong", lambda: m @ x + 1, check),
                         kernels.Peer("broken", lambda: 1 / 0, check)])
    args = type("Args", (), {"budget": 10.0, "min_sample": 0.001, "threads": 1, "repeat": 2})()
    ours, peers = kernels.run_case(case, args, {})
    assert ours.status == "" and ours.runs == 2
    assert peers["right"].runs == 2 and peers["wrong"].status == "WRONG" and peers["wrong"].runs == 0
    assert peers["broken"].status == "ERROR"


#: The matrix families the quick kernels suite is checked on in the tests.
FAMILIES_CHECKED = ("uniform", "power-law", "stencil-2d")
#: The fraction of the quick sizes it is checked at: whether peers agree does not need 10^5 entries.
SCALE = "0.1"


def test_the_quick_kernels_suite_runs_every_kernel_and_every_peer_agrees():
    """`autosparse bench kernels --quick`: exit status 0 only when no result disagrees with scipy/numpy, on
    the families of distinct structure (banded and the 3-D stencil, regular like the 2-D one, run in the
    benchmark itself). One short sample a contender at a tenth of the quick sizes: the times are printed, not
    asserted on."""
    from autosparse_bench import kernels

    done = subprocess.run([sys.executable, "-c", "from autosparse.cli import main; main()", "bench", "kernels",
                           "--quick", "--repeat", "1", "--min-sample", "0.002", "--scales", SCALE,
                           "--matrices", *FAMILIES_CHECKED, "--kernel", *(k for k in kernels.KERNELS if k != "compile")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for kernel in ("SpMV", "SpMSpV", "SpGEMM", "SpMM", "SDDMM", "Add", "Multiply", "TTV", "TTM", "MTTKRP"):
        for family in (*FAMILIES_CHECKED, "uniform 3-D", "power-law 3-D"):
            if (kernel in ("TTV", "TTM", "MTTKRP")) == family.endswith("3-D"):
                assert f"| {family} ×{SCALE} | {kernel} |" in done.stdout, (family, kernel)
    assert "WRONG" not in done.stdout and "FAIL" not in done.stdout
    assert "| SpMV |" in done.stdout.split("autosparse source")[1]  # the kernels' source hashes


def test_the_two_thread_kernels_suite_runs_ours_and_the_threaded_peers_at_two_threads():
    """`kernels-2t` is the kernels suite with `--threads 2`, and OpenMP is not held to one thread for it."""
    from autosparse_bench import command

    argv, environment = command("kernels-2t", ["--quick", "--kernel", "spmm", "--matrices", "uniform", "--tensors",
                                               "--repeat", "1"])
    assert argv[3:5] == ["--threads", "2"] and environment.get("OMP_NUM_THREADS") == os.environ.get("OMP_NUM_THREADS")
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.startswith("# Kernels at 2 threads") and "| uniform | SpMM |" in done.stdout
    assert "runs 2 threads when asked" not in done.stdout  # MKL and GraphBLAS held the count they were given


def test_compare_checks_before_timing_and_never_times_a_wrong_or_broken_contender():
    from autosparse_bench.timing import Mismatch, compare

    calls = []

    def contender(name, value):
        def call():
            calls.append(name)
            return value
        return call

    def check(result):
        if result != 1:
            raise Mismatch(f"{result} is not 1")

    timings = compare({"right": (contender("right", 1), check), "wrong": (contender("wrong", 2), check),
                       "broken": ((lambda: 1 / 0), check), "unchecked": (contender("unchecked", 5), None)},
                      repeat=3, min_sample=0)
    assert timings["right"].runs == 3 and timings["right"].seconds > 0 and timings["right"].status == ""
    assert timings["wrong"].status == "WRONG" and "2 is not 1" in timings["wrong"].detail
    assert timings["wrong"].seconds is None and calls.count("wrong") == 1  # checked once, never timed
    assert timings["broken"].status == "ERROR" and timings["broken"].runs == 0
    assert timings["unchecked"].runs == 3
    # warm-up, the call that sizes the batch, then one call a round (min_sample 0: batches of one)
    assert calls.count("right") == 2 + 3
    # rounds rotate: the timed calls do not always come in the same order
    timed = [c for c in calls if c in ("right", "unchecked")][4:]
    assert timed[:2] == ["right", "unchecked"] and timed[2:4] == ["unchecked", "right"]


def test_compare_times_a_call_over_budget_by_one_call():
    import time

    from autosparse_bench.timing import compare

    slow = compare({"slow": ((lambda: time.sleep(0.03)), None)}, repeat=5, budget=0.01)["slow"]
    assert slow.runs == 1 and slow.seconds >= 0.03
    unwarmed = []
    compare({"first": ((lambda: unwarmed.append(1)), None)}, repeat=2, warm_up=False, min_sample=0)
    assert len(unwarmed) == 3  # the checked call is also the first timed one


def test_records_from_forked_workers_land_whole_in_one_file(tmp_path):
    import multiprocessing

    from autosparse_bench.records import Records, read

    target = Records(str(tmp_path / "suite.jsonl"))
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=lambda n=n: [target.timing("K", f"d{n}", f"c{m}", 1e-3 * m, detail="x" * 500)
                                                   for m in range(200)]) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    taken = read(tmp_path / "suite.jsonl")
    assert len(taken) == 800 and {r["dataset"] for r in taken} == {"d0", "d1", "d2", "d3"}
    assert all(r["kind"] == "timing" and r["role"] == "peer" for r in taken)
    Records(str(tmp_path / "suite.jsonl"))  # a new run starts the file afresh
    assert read(tmp_path / "suite.jsonl") == []


def _timing(kernel, dataset, contender, seconds, role="peer", status="", **extra):
    return {"kind": "timing", "kernel": kernel, "dataset": dataset, "contender": contender, "seconds": seconds,
            "role": role, "status": status, "nnz": 100, **extra}


def test_the_report_states_every_loss_with_its_factor(tmp_path):
    from autosparse_bench import report

    records = [_timing("SpMV", "uniform", "autosparse", 2e-3, "ours"),
               _timing("SpMV", "uniform", "scipy A @ x", 1e-3),
               _timing("SpMV", "uniform", "tensora (llvm)", 8e-3),
               _timing("SpMV", "uniform", "tensora (cffi)", 4e-3),
               _timing("SpMV", "uniform", "pydata A @ x", None, status="WRONG"),
               _timing("SpMV", "uniform", "C reference", 1.6e-3),
               _timing("SpMV", "uniform", "copy of the same bytes", 0.5e-3, "bound")]
    groups = report._groups("kernels", records)
    text = "\n".join(report._timing_section("kernels", groups, tmp_path))
    # scipy, Tensora's faster backend, pydata's wrong result shown as such, the copy
    assert "| uniform | 100 | 2 | scipy A @ x | 0.50× | 0.50× | 2.00× | WRONG | 0.80× | 0.25× |" in text
    assert "| data | nnz | ours ms | fastest peer | fastest peer / ours | scipy |" in text
    # one line per case, the fastest peer first
    assert "- SpMV, uniform: scipy A @ x takes 1 ms against autosparse's 2 ms: 2.00× faster; also C reference (1.25×)" \
        in text
    assert "copy" not in text.split("### Where autosparse loses")[1]  # a bound is no peer
    assert (tmp_path / "kernels-speedup.png").read_bytes()[:4] == b"\x89PNG"
    assert "fastest on 0 of the 1" in report._summary_line("kernels", groups)


def test_the_report_separates_other_autosparse_schedules_and_bounds_a_timed_out_one(tmp_path):
    from autosparse_bench import report

    records = [_timing("SpMV2", "uniform n=256", "selected", 1e-3, "ours"),
               _timing("SpMV2", "uniform n=256", "default schedule", None, "variant", "timeout", limit=30),
               _timing("SpMV2", "uniform n=256", "fastest candidate", 0.5e-3, "variant")]
    text = "\n".join(report._timing_section("asymptotic", report._groups("asymptotic", records), tmp_path))
    assert "| uniform n=256 | 100 | 1 | — | — | > 3e+04× | 0.50× |" in text
    assert "Nowhere: no peer was faster." in text
    assert "- SpMV2, uniform n=256: fastest candidate takes 0.5 ms against selected's 1 ms: 2.00× faster" in text


def test_the_report_shows_each_stage_count_beside_the_papers(tmp_path):
    from autosparse_bench import report

    counts = [{"kind": "count", "kernel": "SpMV", "mode": "full", "stage": name, "count": count, "seconds": 0.5,
               "paper": paper} for name, count, paper in (("1 rewrites", 1, None), ("6 protocols (8 schedules)", 8, 8),
                                                          ("7 filter (4 distinct costs)", 4, 4))]
    text = "\n".join(report._count_section("asymptotic-counts", counts, tmp_path))
    assert "| SpMV | full | 1 → 8 → 4 | 6 protocols: 8; 7 filter: 4 | 1.5 | — |" in text
    assert (tmp_path / "asymptotic-counts-stages.png").read_bytes()[:4] == b"\x89PNG"


def test_a_suite_run_again_replaces_its_part_of_the_report_and_docs_link_into_it(tmp_path):
    import json

    from autosparse_bench import report

    folder = tmp_path / "report"
    folder.mkdir()
    for suite, seconds in (("kernels", 2e-3), ("conversion", 1e-3)):
        (folder / f"{suite}.run.json").write_text(json.dumps({"command": f"autosparse bench {suite}", "commit": "abc",
                                                              "generated": "today", "minutes": 1.0, "exit": 0,
                                                              "machine": "here"}))
        (folder / f"{suite}.jsonl").write_text(json.dumps(_timing("K", "d", "autosparse", seconds, "ours")) + "\n"
                                               + json.dumps(_timing("K", "d", "scipy", 1.5e-3)) + "\n")
    text = report.assemble(folder, tmp_path / "docs" / "benchmarks.md")
    assert "| [kernels](#kernels) | `autosparse bench kernels` | abc |" in text and "## conversion" in text
    assert "Not in this report: kernels-2t, coiteration" in text
    assert "scipy takes 1.5 ms against autosparse's 2 ms: 1.33× faster" in text
    docs = (tmp_path / "docs" / "benchmarks.md").read_text()
    assert "](../report/kernels.md)" in docs and "](../report/kernels-speedup.png)" in docs and "](#kernels)" in docs


def test_a_suites_written_causes_of_its_losses_go_under_its_section(tmp_path):
    import json

    from autosparse_bench import report

    for suite in ("kernels", "conversion"):
        (tmp_path / f"{suite}.run.json").write_text(json.dumps({"command": f"autosparse bench {suite}", "commit": "abc",
                                                                "generated": "today", "minutes": 1.0, "exit": 0,
                                                                "machine": "here"}))
        (tmp_path / f"{suite}.jsonl").write_text(json.dumps(_timing("K", "d", "autosparse", 2e-3, "ours")) + "\n")
    (tmp_path / "kernels-causes.md").write_text("- SpMV COO operand: the operand is converted on every call.\n")
    text = report.assemble(tmp_path)
    kernels, conversion = text.split("## conversion")[0].split("## kernels")[1], text.split("## conversion")[1]
    assert "### Why autosparse loses where it does\n\n- SpMV COO operand: the operand is converted" in kernels
    assert "Why autosparse loses" not in conversion


def test_autosparse_bench_report_runs_the_suite_and_writes_the_report(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from autosparse.cli import main; main()", "bench", "--report",
                           str(tmp_path / "report"), "kernels", "--quick", "--repeat", "1", "--kernel", "spmv", "ttv",
                           "--matrices", "uniform", "--tensors", "uniform"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = (tmp_path / "report" / "README.md").read_text()
    assert "machine:" in text and "### Where autosparse loses" in text and "--scales 0.125 0.25 0.5 1" in text
    assert "### SpMV" in text and "| uniform ×0.125 |" in text and "| uniform 3-D |" in text
    assert {"kernels.md", "kernels.jsonl", "kernels.run.json", "kernels-speedup.png", "kernels-runtime.png"} <= \
        {p.name for p in (tmp_path / "report").iterdir()}


@pytest.mark.parametrize("suite, options, kernel", [
    ("scaling", ["--quick", "--kernel", "sddmm", "--repeat", "1"], "SDDMM"),
    ("coiteration", ["--quick", "--only", "bcsr", "--repeat", "1"], "SpMV on BCSR"),
    ("asymptotic", ["--quick", "--kernel", "SpMV", "--max-n", "256", "--scales"], "SpMV"),
    ("sparseauto", ["--quick", "--kernel", "4", "--no-cases"], "4 ⟨SpMM,GEMM⟩")])
def test_other_suites_leave_records_with_autosparse_marked_and_its_source_hashed(tmp_path, suite, options, kernel):
    from autosparse_bench import command
    from autosparse_bench.records import read

    argv, environment = command(suite, [*options, "--json", str(tmp_path / "r.jsonl")])
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    taken = read(tmp_path / "r.jsonl")
    assert taken and all(r["kernel"] == kernel and r["seconds"] > 0 for r in taken)
    groups = {}
    for r in taken:
        groups.setdefault(r["dataset"], []).append(r)
        if r["role"] == "ours":
            assert len(r["source"]) == 12 and int(r["source"], 16) >= 0
    assert all([r["role"] for r in group].count("ours") == 1 for group in groups.values())


@pytest.mark.parametrize("suite, module", [("asymptotic-counts", "asymptotic_counts"),
                                           ("sparseauto-counts", "sparseauto_counts")])
def test_counting_suites_have_a_quick_size_and_record_every_stage(tmp_path, suite, module):
    import importlib

    from autosparse_bench.records import read

    main = importlib.import_module(f"autosparse_bench.{module}").main
    kernel = {"asymptotic-counts": "SpMV", "sparseauto-counts": "4"}[suite]
    main(["--quick", "--kernel", kernel, "--no-check", "--json", str(tmp_path / "r.jsonl")])
    taken = read(tmp_path / "r.jsonl")
    assert taken and all(r["kind"] == "count" and r["count"] >= 1 for r in taken)
    assert any(r["paper"] is not None and r["count"] == r["paper"] for r in taken)  # the final frontier's


def test_the_distributed_suite_times_every_contender_checked_and_projects(tmp_path):
    from autosparse_bench import command
    from autosparse_bench.records import read

    argv, environment = command("distributed", ["--quick", "--kernel", "mttkrp", "--repeat", "1",
                                                "--json", str(tmp_path / "r.jsonl")])
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    taken = read(tmp_path / "r.jsonl")
    timed = {(r["kernel"], r["contender"]): r for r in taken}
    assert {c for k, c in timed if k == "MTTKRP"} == {"in process", "2 workers", "1 worker", "2 workers, shipped",
                                                     "2 workers, kept there"}
    assert all(r["seconds"] > 0 and r["status"] == "" for r in taken)
    assert [r["role"] for r in taken if r["kernel"] == "MTTKRP"].count("ours") == 1
    assert timed[("MTTKRP", "2 workers")]["broadcast_bytes"] > 0
    assert any(k == "overhead" for k, _ in timed)
    assert "Projected on W machines" in done.stdout


def test_the_traps_script_measures_each_trap_in_its_own_process():
    """`python -m autosparse_bench.traps`: one table row per trap, the error a trap raises as its finding."""
    done = subprocess.run([sys.executable, "-m", "autosparse_bench.traps", "--trap", "division", "missing_file",
                           "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    division, missing = rows
    assert "A(i,j) / 2" in division and "format ds" in division and "**" not in division
    assert "**FileNotFoundError" in missing and "file not found" in missing


def test_the_quick_autotune_suite_times_a_checked_sample_of_every_frontier(tmp_path):
    """`autosparse bench autotune --quick`: one row per (kernel, input) with every column filled, at most
    --max-candidates timed per pair with the pick among them, and every timed result checked."""
    from autosparse_bench import command
    from autosparse_bench.records import read

    argv, environment = command("autotune", ["--quick", "--json", str(tmp_path / "r.jsonl")])
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    table = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    header, rows = table[0], table[1:]
    assert len(header) == 15 and all(len(row) == len(header) for row in rows)
    assert {row[0].strip("| ") for row in rows} == {"SpMV2", "SDDMM", "SA4"} and len(rows) == 6
    assert "pick within 1.25×" in done.stdout and "search seconds per kernel" in done.stdout
    taken = read(tmp_path / "r.jsonl")
    candidates = [r for r in taken if r["kind"] == "candidate"]
    pairs = {(r["kernel"], r["dataset"]) for r in candidates}
    assert len(pairs) == 6
    for pair in pairs:
        mine = [r for r in candidates if (r["kernel"], r["dataset"]) == pair]
        assert 1 <= len(mine) <= 6 + 1 and sum(r["selected"] for r in mine) == 1  # and the default in a tie
    assert all(r["checked"] for r in candidates if r["seconds"] is not None)
    searches = [r for r in taken if r["kind"] == "count"]  # one per kernel: its frontier and search seconds
    assert sorted(r["kernel"] for r in searches) == ["SA4", "SDDMM", "SpMV2"]
    assert all(r["count"] >= len({c["cin"] for c in candidates if c["kernel"] == r["kernel"]}) for r in searches)
    timings = [r for r in taken if r["kind"] == "timing"]
    assert all([r["role"] for r in timings if (r["kernel"], r["dataset"]) == pair].count("ours") == 1 for pair in pairs)


def test_the_autotune_sample_keeps_the_pick_the_best_estimated_and_spreads_over_ranks_and_structures():
    from types import SimpleNamespace

    from autosparse_bench.autotune import stratified

    def candidate(loops, transposes=()):
        return SimpleNamespace(cin=" ".join(f"∀{i}" for i in loops) + " A(i) += B(i)",
                               transposes=dict.fromkeys(transposes), temporaries=[])

    front = [candidate("ij" if n % 2 else "ji", ("B",) if n % 5 == 0 else ()) for n in range(40)]
    order = [7, *range(7), *range(8, 40)]  # the tie's first first, then by estimate
    sample = stratified(front, budget=10, best_few=3)
    kept = sample(order, [7, 30])  # the tie's contenders
    assert kept[:5] == [7, 30, 0, 1, 2] and len(kept) == 10 == len(set(kept))
    bands = [set(band) for band in np.array_split(np.asarray([n for n in order if n not in kept[:5]]), 5)]
    assert all(len(band & set(kept)) == 1 for band in bands)  # one from each rank band
    assert {tuple(front[n].transposes) for n in kept} == {("B",), ()}
    assert sample(order[:10]) == order[:10]  # within the budget: every candidate


def test_the_asymptotic_suite_counts_a_candidate_over_the_memory_limit_apart_from_failures(monkeypatch, capsys):
    """A candidate whose dense workspaces refuse the operands is a verdict on it (SpGEMMH's 3-D
    workspaces on large inputs), not a failure of the suite: counted in the row, not listed as FAILED;
    a wrong result still is."""
    from types import SimpleNamespace

    from autosparse_bench import asymptotic_select
    from autosparse_bench.records import Records

    monkeypatch.setattr(asymptotic_select, "ARGS", SimpleNamespace(records=Records(None), timeout=1.0))
    fast, refusing, wrong = (SimpleNamespace(cin=text) for text in ("∀i fast", "∀i refusing", "∀i wrong"))
    timings = [[fast, {"seconds": 0.5}, 0.0],
               [refusing, "failed: MemoryLimitError: Expected dense workspaces within the limit", 0.0],
               [wrong, "failed: result differs from the default's (1.0 vs 2.0)", 0.0]]
    B = asp.Tensor.from_scipy(data.uniform(8, 8, 10, seed=0), format="csr")
    rows, failures = [], []
    asymptotic_select.report("SpMV2", "uniform n=8", {"B": B},
                             ({"seconds": 1.0}, fast, 0.001, timings, {"default schedule": "0" * 12}),
                             rows, failures)
    assert [cin for _, _, cin, _ in failures] == ["∀i wrong"]
    assert "1 + 0 cut + 1 over memory" in capsys.readouterr().out
    assert asymptotic_select.over_memory(timings[1][1]) and not asymptotic_select.over_memory(timings[2][1])
