"""The `autosparse` command: demo on generated and file data, info, convert, and errors as messages."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from click.testing import CliRunner

import autosparse as asp
from autosparse.cli import main


def test_demo_on_generated_data(tmp_path):
    result = CliRunner().invoke(main, ["demo", "--data", str(tmp_path / "missing")])
    assert result.exit_code == 0, result.output
    assert "generated" in result.output and "MISMATCH" not in result.output
    assert result.output.count(" ok") == 13


def test_demo_info_and_convert_on_files(tmp_path):
    tensor = asp.Tensor.from_numpy(np.arange(12.0).reshape(3, 4), "csr")
    asp.write(tmp_path / "m.mtx.gz", tensor)
    runner = CliRunner()
    demo = runner.invoke(main, ["demo", "--data", str(tmp_path)])
    assert demo.exit_code == 0 and "m.mtx.gz" in demo.output and demo.output.count(" ok") == 7
    info = runner.invoke(main, ["info", str(tmp_path / "m.mtx.gz")])
    assert info.exit_code == 0 and "shape=(3, 4)" in info.output and "nnz=11" in info.output
    converted = runner.invoke(main, ["convert", str(tmp_path / "m.mtx.gz"), str(tmp_path / "m.tns")])
    assert converted.exit_code == 0
    np.testing.assert_array_equal(asp.read(tmp_path / "m.tns").to_numpy(), tensor.to_numpy())


def test_bad_file_is_a_message_not_a_traceback(tmp_path):
    (tmp_path / "bad.tns").write_text("1 x 2\n")
    result = CliRunner().invoke(main, ["info", str(tmp_path / "bad.tns")])
    assert result.exit_code == 2 and "Error: Expected lines" in result.output


def test_demo_on_vectors_and_order_4_tensors(tmp_path):
    asp.write(tmp_path / "v.tns", asp.Tensor.from_coo([[0, 3]], [1.0, 2.0], (5,)))
    asp.write(tmp_path / "t.tns", asp.Tensor.from_coo(np.array([[0, 1], [1, 0], [2, 2], [0, 3]]), [1.0, 2.0], (2, 2, 3, 4)))
    result = CliRunner().invoke(main, ["demo", "--data", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.count(" ok") == 8


def test_compile_prints_cin_and_c():
    result = CliRunner().invoke(main, ["compile", "y(i) = A(i,j) * x(j)", "-f", "A=csr"],
                                env={"AUTOSPARSE_NUM_THREADS": "1"})  # the sequential default (threads: test_threads)
    assert result.exit_code == 0, result.output
    assert "// ∀i ∀j y(i) += A(i,j) * x(j)" in result.output
    assert "int autosparse_kernel(" in result.output and "A_crd2" in result.output


def test_compile_errors_are_messages():
    result = CliRunner().invoke(main, ["compile", "y(i) = A(i,j) *", "-f", "A=csr"])
    assert result.exit_code == 2 and "column" in result.output
    bad = CliRunner().invoke(main, ["compile", "y(i) = A(i,j) * x(j)", "-f", "A"])
    assert bad.exit_code == 2 and "NAME=VALUE" in bad.output


def test_run_reads_operands_and_writes_the_result(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.random((4, 5)) * (rng.random((4, 5)) < 0.5)
    x = rng.random(5)
    asp.write(tmp_path / "A.mtx", asp.Tensor.from_numpy(a, "csr"))
    asp.write(tmp_path / "x.tns", asp.Tensor.from_numpy(x, "s"))
    runner = CliRunner()
    result = runner.invoke(main, ["run", "y(i) = A(i,j) * x(j)", "-i", f"A={tmp_path / 'A.mtx'}",
                                  "-i", f"x={tmp_path / 'x.tns'}", "-f", "y=s", "-o", str(tmp_path / "y.tns")])
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(asp.read(tmp_path / "y.tns").to_numpy(), a @ x)
    dot = runner.invoke(main, ["run", "s() = x(i) * x(i)", "-i", f"x={tmp_path / 'x.tns'}"])
    assert dot.exit_code == 0 and abs(float(dot.output) - x @ x) < 1e-9
    z = rng.random(4)
    asp.write(tmp_path / "z.tns", asp.Tensor.from_numpy(z, "s"))
    scoped = runner.invoke(main, ["run", "y(i) = A(i,j) * x(j) + z(i)", "-i", f"A={tmp_path / 'A.mtx'}",
                                  "-i", f"x={tmp_path / 'x.tns'}", "-i", f"z={tmp_path / 'z.tns'}",
                                  "-o", str(tmp_path / "axz.tns")])
    assert scoped.exit_code == 0, scoped.output
    np.testing.assert_allclose(asp.read(tmp_path / "axz.tns").to_numpy(), a @ x + z)  # z once, TACO's reading


def test_autoschedule_prints_the_frontier_stats_and_checks_it():
    """SpGEMM in TACO mode: the paper's frontier has 4 programs (Figure 6); ours drops the outer products
    that only differ by staging through a 2-D hash table."""
    args = ["autoschedule", "A(i,j) = B(i,k) * C(j,k)", "-f", "B=csr", "-f", "C=csr", "-f", "A=csr",
            "--taco-mode", "--stats", "--check"]
    paper = CliRunner().invoke(main, [*args, "--paper"])
    assert paper.exit_code == 0, paper.output
    assert "frontier: 4 programs" in paper.output and "compiled and equal to numpy: 4 / 4" in paper.output
    assert "6 protocols (min-depth schedules)" in paper.output and "programs processed: 16 / 16" in paper.output
    ours = CliRunner().invoke(main, args)
    assert ours.exit_code == 0, ours.output
    assert "frontier: 2 programs" in ours.output and "compiled and equal to numpy: 2 / 2" in ours.output
    assert "t0(i,j)" not in ours.output and "t0(i,j)" in paper.output


def test_autoschedule_sparseauto_prints_schedules_costs_and_stages():
    """SpMM then GEMM (the paper's kernel 4): two loop orders of one scalar-temporary schedule survive."""
    args = ["autoschedule", "A(i,l) = B(i,j) * C(j,k) * D(k,l)", "-f", "B=ds", "--model", "sparseauto",
            "-c", "j >= 16", "-c", "nnz(B) >= 2*i", "--stats", "--check", "--stage1-groups"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "i,k⟨t0(); j: t0() += B(i,j) * C(j,k), l: A(i,l) += t0() * D(k,l)⟩" in result.output
    assert "time: I·K·L + K·nnz(B_ij)   memory: 0   loop depth 3, memory depth 0" in result.output
    assert "3 SMT (everywhere)" in result.output and "compiled and equal to numpy: 2 / 2" in result.output
    bad = CliRunner().invoke(main, [*args[:8], "-c", "nnz(Q) < 3"])
    assert bad.exit_code != 0 and "sparse tensor among ['B']" in bad.output


def test_autoschedule_names_a_bad_format():
    result = CliRunner().invoke(main, ["autoschedule", "a(i) = B(i,j) * c(j)", "-f", "B=xyz"])
    assert result.exit_code != 0
    assert "xyz" in result.output


def test_bench_lists_its_suites_and_refuses_others():
    runner = CliRunner()
    listed = runner.invoke(main, ["bench", "--help"])
    assert listed.exit_code == 0 and "kernels" in listed.output and "scaling" in listed.output
    refused = runner.invoke(main, ["bench", "nope"])
    assert refused.exit_code != 0 and "is not one of" in refused.output


def test_bench_report_options_beyond_quick_need_a_suite(tmp_path):
    refused = CliRunner().invoke(main, ["bench", "--report", str(tmp_path), "--repeat", "3"])
    assert refused.exit_code != 0 and "name it after --report DIR" in refused.output


def _one_line_and_status_2(result) -> str:
    """A user's mistake: status 2, nothing on stdout past what the command printed, one line on stderr."""
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # reported, not raised
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.output, result.stderr
    return lines[0]


def test_users_mistakes_are_one_line_and_status_2(tmp_path):
    (tmp_path / "bad.mtx").write_text("3 3 1\n1 1 1.0\n")
    (tmp_path / "dir.tns").mkdir()
    (tmp_path / "x.tns").write_text("1 1.0\n")
    runner = CliRunner()
    cases = {
        ("info", str(tmp_path / "bad.mtx")): "banner",
        ("info", str(tmp_path / "dir.tns")): "Is a directory",
        ("convert", str(tmp_path / "x.tns"), str(tmp_path / "missing" / "x.mtx")): "matrix for a .mtx",
        ("convert", str(tmp_path / "x.tns"), str(tmp_path / "missing" / "x.tns")): "No such file or directory",
        ("compile", "y(i) = A(i,j) * x(j)", "-f", "A=xy"): "level letter",
        ("compile", "y(i) = A(i,j) * x(j)", "--schedule", "precompute([0], j, jw)"): "expected an expression",
        ("run", "y(i) = A(i,j) * x(j)", "-i", f"A={tmp_path / 'dir.tns'}"): "Is a directory",
        ("run", "y(i) = A(i,j) * x(j)", "-i", f"A={tmp_path / 'nope.mtx'}"): "file not found",
        ("autoschedule", "a(i) = B(i,j) *", "-f", "B=csr"): "column",
    }
    for args, message in cases.items():
        assert message in _one_line_and_status_2(runner.invoke(main, list(args))), args


def test_internal_errors_keep_their_traceback(monkeypatch):
    from autosparse import io

    def broken(path):
        raise KeyError("a bug, not a mistake")

    monkeypatch.setattr(io, "read", broken)
    result = CliRunner().invoke(main, ["info", __file__])
    assert isinstance(result.exception, KeyError) and result.exit_code == 1


def test_the_command_in_a_process_of_its_own(tmp_path):
    (tmp_path / "bad.mtx").write_text("3 3 1\n1 1 1.0\n")
    result = subprocess.run([sys.executable, "-m", "autosparse.cli", "info", str(tmp_path / "bad.mtx")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "banner" in result.stderr
