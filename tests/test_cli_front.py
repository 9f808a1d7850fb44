"""The command as a new user meets it: `--version`, `run` printing small results and writing large ones
(a sparse result when sparse operands bound it, never a dense SpGEMM), every mistake one line with status
2, and the demo checking its kernels against scipy.sparse without densifying (issue 28, CLI section)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse
from click.testing import CliRunner

import autosparse as asp
from autosparse import api
from autosparse.cli import PRINT_LIMIT, main, same_entries


def _sparse(rng, shape, density) -> scipy.sparse.csr_array:
    """A random matrix with positive values (no cancellation: scipy's pattern is the true one)."""
    count = round(density * shape[0] * shape[1])
    rows, cols = np.unravel_index(rng.choice(shape[0] * shape[1], size=count, replace=False), shape)
    return scipy.sparse.csr_array((1 + rng.random(count), (rows, cols)), shape=shape)


def _write_matrix(path, matrix) -> str:
    asp.write(path, asp.Tensor.from_scipy(scipy.sparse.csr_array(matrix), "csr"))
    return str(path)


def _write_vector(path, vector) -> str:
    asp.write(path, asp.Tensor.from_numpy(np.asarray(vector, dtype=float), "s"))
    return str(path)


def _run(*args):
    return CliRunner().invoke(main, ["run", *args])


def _one_line_and_status_2(result) -> str:
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.output, result.stderr
    return lines[0]


def _printed_entries(output: str) -> tuple[tuple[int, ...], scipy.sparse.coo_array]:
    """The header's shape and the entries `run` printed for a sparse matrix result, as scipy."""
    header, *lines = output.strip().splitlines()
    shape = tuple(int(n) for n in header[header.index("(") + 1:header.index(")")].split(","))
    rows, cols, values = [], [], []
    for line in lines:
        coordinate, value = line.strip().rsplit("  ", 1)
        row, col = (int(n) for n in coordinate.strip("()").split(","))
        rows.append(row), cols.append(col), values.append(float(value))
    return shape, scipy.sparse.coo_array((values, (rows, cols)), shape=shape)


def test_version_is_the_package_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"autosparse, version {asp.__version__}"


@pytest.mark.parametrize("shape, density", [((5, 7), 0.3), ((1, 1), 1.0), ((6, 4), 0.0), ((3, 8), 0.05)])
def test_run_prints_a_sparse_product_entry_by_entry(tmp_path, shape, density):
    """SpGEMM without -f C=...: operands read from files are sparse, so C is CSR with unsorted rows, printed as its entries
    (empty, single-entry, non-square and 1x1 included) and equal to scipy's product."""
    rng = np.random.default_rng(0)
    a, b = _sparse(rng, shape, density), _sparse(rng, shape[::-1], density)
    result = _run("C(i,j) = A(i,k) * B(k,j)", "-i", f"A={_write_matrix(tmp_path / 'A.mtx', a)}",
                  "-i", f"B={_write_matrix(tmp_path / 'B.mtx', b)}")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{(shape[0], shape[0])} in ds~ with {(a @ b).nnz:,} entries:")
    printed_shape, printed = _printed_entries(result.output)
    assert printed_shape == (shape[0], shape[0]) and same_entries(asp.Tensor.from_scipy(printed.tocsr()), a @ b)


def test_run_prints_a_dense_result_as_numpy_does(tmp_path):
    """A dense term over all the result's indices (z stored dense) makes the result dense."""
    rng = np.random.default_rng(1)
    a, x, z = _sparse(rng, (4, 6), 0.5), rng.random(6), rng.random(4)
    result = _run("y(i) = A(i,j) * x(j) + z(i)", "-i", f"A={_write_matrix(tmp_path / 'A.mtx', a)}",
                  "-i", f"x={_write_vector(tmp_path / 'x.tns', x)}", "-i", f"z={_write_vector(tmp_path / 'z.tns', z)}",
                  "-f", "z=d")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("[") and result.output.count("\n") == 1
    np.testing.assert_allclose(np.array(result.output.strip("[]\n").split(), dtype=float), a @ x + z, rtol=1e-7)


@pytest.mark.parametrize("expression, formats, printed", [
    ("y(i) = A(i,j) * x(j)", [], "["),                                     # CSR's rows: a dense level
    ("y(i) = A(i,j) * x(j)", ["-f", "A=dcsr"], "(4,) in s with"),          # DCSR's rows bound i
    ("y(i) = A(i,j) * x(j)", ["-f", "A=dcsr", "-f", "x=d"], "(4,) in s with"),  # a dense factor does not matter
    ("y(i) = A(i,j) * x(j) + z(i)", [], "(4,) in s with"),                 # a sum of sparse terms
    ("y(i) = A(i,j) * x(j) + z(i)", ["-f", "z=d"], "["),                   # a dense term
    ("y(i) = A(i,j) * x(j) + 2", [], "["),                                 # a literal term
    ("y(i) = A(i,j) * x(j)", ["-f", "y=d"], "["),                          # a result format given
])
def test_run_infers_the_result_format_from_its_operands(tmp_path, expression, formats, printed):
    rng = np.random.default_rng(2)
    operands = {"A": _write_matrix(tmp_path / "A.mtx", _sparse(rng, (4, 3), 0.5)),
                "x": _write_vector(tmp_path / "x.tns", rng.random(3)),
                "z": _write_vector(tmp_path / "z.tns", rng.random(4))}
    used = [arg for name, path in operands.items() if f"{name}(" in expression for arg in ("-i", f"{name}={path}")]
    result = _run(expression, *used, *formats)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(printed), result.output


def test_run_refuses_to_print_a_large_result_and_writes_it(tmp_path):
    """Past PRINT_LIMIT entries `run` asks for -o in one line; with -o it writes the sparse product
    (never a dense C) and reports its true number of stored entries."""
    rng = np.random.default_rng(3)
    a = _sparse(rng, (60, 60), 0.2)
    assert (a @ a).nnz > PRINT_LIMIT
    operands = ["-i", f"A={_write_matrix(tmp_path / 'A.mtx.gz', a)}", "-i", f"B={tmp_path / 'A.mtx.gz'}"]
    refused = _one_line_and_status_2(_run("C(i,j) = A(i,k) * B(k,j)", *operands))
    assert "too large to print" in refused and "-o" in refused and f"{(a @ a).nnz:,} entries" in refused
    for name in ("C.mtx", "C.tns.gz"):
        written = _run("C(i,j) = A(i,k) * B(k,j)", *operands, "-o", str(tmp_path / name))
        assert written.exit_code == 0, written.output
        assert written.output == f"wrote C (60, 60) with {(a @ a).nnz:,} entries to {tmp_path / name}\n"
        back = asp.read(tmp_path / name, shape=(60, 60))
        assert back.nnz == (a @ a).nnz and same_entries(back, a @ a)
    mtx = scipy.io.mmread(tmp_path / "C.mtx")  # the file is Matrix Market as scipy reads it
    assert same_entries(asp.Tensor.from_scipy(scipy.sparse.csr_array(mtx)), a @ a)


def test_run_writes_a_dense_result_and_a_3_tensor_contraction(tmp_path):
    rng = np.random.default_rng(4)
    a, x = _sparse(rng, (5, 3), 0.6), rng.random(3)
    written = _run("y(i) = A(i,j) * x(j)", "-i", f"A={_write_matrix(tmp_path / 'A.mtx', a)}",
                   "-i", f"x={_write_vector(tmp_path / 'x.tns', x)}", "-f", "y=d", "-o", str(tmp_path / "y.tns"))
    assert written.exit_code == 0, written.output
    np.testing.assert_allclose(asp.read(tmp_path / "y.tns").to_numpy(), a @ x)
    coords = np.array([[0, 1, 1, 3], [2, 0, 0, 1], [1, 1, 4, 0]])
    values = np.array([1.5, -2.0, 3.0, 0.25])
    asp.write(tmp_path / "T.tns", asp.Tensor.from_coo(coords, values, (4, 3, 5)))
    v = np.arange(1.0, 6.0)
    ttv = _run("A(i,j) = T(i,j,k) * v(k)", "-i", f"T={tmp_path / 'T.tns'}",
               "-i", f"v={_write_vector(tmp_path / 'v.tns', v)}", "-o", str(tmp_path / "ttv.tns"))
    assert ttv.exit_code == 0, ttv.output
    expected = scipy.sparse.coo_array((values * v[coords[2]], (coords[0], coords[1])), shape=(4, 3))
    assert same_entries(asp.read(tmp_path / "ttv.tns", shape=(4, 3)), expected)


def test_every_mistake_is_one_line_and_status_2(tmp_path):
    a = _write_matrix(tmp_path / "A.mtx", np.eye(3))
    x = _write_vector(tmp_path / "x.tns", [1.0, 2.0, 3.0])
    short = _write_vector(tmp_path / "short.tns", [1.0, 2.0])
    spmv = ["run", "y(i) = A(i,j) * x(j)", "-i", f"A={a}"]
    cases = {
        (*spmv, "-i", f"x={tmp_path / 'nope.tns'}"): f"Error: file not found: {tmp_path / 'nope.tns'}",
        (*spmv, "-i", f"x={tmp_path / 'nope.txt'}"): f"Error: file not found: {tmp_path / 'nope.txt'}",
        ("info", str(tmp_path / "missing.mtx")): f"Error: file not found: {tmp_path / 'missing.mtx'}",
        ("convert", str(tmp_path / "missing.mtx"), str(tmp_path / "m.tns")): "file not found",
        (*spmv, "-i", f"x={x}", "-f", "A=qz"): "level letter",
        (*spmv, "-i", f"x={short}"): "extent of j",
        ("run", "y(i) = A(i,j) *", "-i", f"A={a}"): "column",
        (*spmv, "-i", f"x={x}", "--frob"): "No such option",
        ("--frob",): "No such option",
        ("run", "y(i) = A(i,j) * x(j)"): "Missing option",
        (*spmv, "-i", f"x={x}", "-o", str(tmp_path / "y.txt")): ".mtx, .mtx.gz, .tns or .tns.gz",
        ("run", "s() = x(i) * x(i)", "-i", f"x={x}", "-o", str(tmp_path / "s.tns")): "is a number",
        (*spmv, "-i", f"x={x}", "-i", "x"): "NAME=VALUE",
    }
    for args, message in cases.items():
        assert message in _one_line_and_status_2(CliRunner().invoke(main, list(args))), args


def test_a_mistake_in_a_process_of_its_own_is_one_line_on_stderr(tmp_path):
    result = subprocess.run([sys.executable, "-m", "autosparse.cli", "run", "y(i) = A(i,j) * x(j)",
                             "-i", f"A={tmp_path / 'A.mtx'}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"Error: file not found: {tmp_path / 'A.mtx'}\n"


@pytest.mark.parametrize("name", ["m.mtx", "t.tns.gz", "no-suffix"])
def test_reading_a_missing_file_says_it_is_not_found(tmp_path, name):
    with pytest.raises(FileNotFoundError, match="file not found"):
        asp.read(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="file not found"):
        asp.io.describe(tmp_path / name)


def test_same_entries_compares_values_over_the_union_of_patterns():
    reference = scipy.sparse.coo_array(([1.0, 2.0, 0.5], ([0, 1, 1], [2, 0, 0])), shape=(2, 3))  # (1,0) twice
    right = asp.Tensor.from_coo(np.array([[0, 1, 1], [2, 0, 1]]), [1.0, 2.5, 0.0], (2, 3))  # an explicit zero
    assert same_entries(right, reference) and same_entries(right.to_format("dense"), reference)
    assert same_entries(np.array([[0.0, 0.0, 1.0], [2.5, 0.0, 0.0]]), reference)
    wrong_value = asp.Tensor.from_coo(np.array([[0, 1], [2, 0]]), [1.0, 2.4], (2, 3))
    missing = asp.Tensor.from_coo(np.array([[1], [0]]), [2.5], (2, 3))
    extra = asp.Tensor.from_coo(np.array([[0, 1, 0], [2, 0, 0]]), [1.0, 2.5, 1e-3], (2, 3))
    transposed = asp.Tensor.from_coo(np.array([[2, 0], [0, 1]]), [1.0, 2.5], (3, 2))
    assert not any(same_entries(wrong, reference) for wrong in (wrong_value, missing, extra, transposed))
    empty = scipy.sparse.csr_array((4, 0))
    assert same_entries(asp.Tensor.from_scipy(empty, "csr"), empty)
    assert same_entries(np.arange(3.0), np.arange(3.0)) and not same_entries(np.arange(3.0), np.ones(3))
    assert same_entries(2.0, 2.0 + 1e-12) and not same_entries(2.0, 2.1)


def _demo_folder(tmp_path):
    """Small matrices and a 3-tensor: square, non-square, single-entry, empty, with an explicit zero."""
    rng = np.random.default_rng(5)
    _write_matrix(tmp_path / "square.mtx", _sparse(rng, (30, 30), 0.1))
    _write_matrix(tmp_path / "wide.mtx.gz", _sparse(rng, (7, 40), 0.2))
    asp.write(tmp_path / "single.mtx", asp.Tensor.from_coo(np.array([[0], [0]]), [3.0], (1, 1), format="csr"))
    asp.write(tmp_path / "empty.mtx", asp.Tensor.from_coo(np.zeros((2, 0), int), [], (5, 5), format="csr"))
    asp.write(tmp_path / "zero.mtx", asp.Tensor.from_coo(np.array([[0, 2], [1, 2]]), [0.0, 4.0], (3, 3), format="csr"))
    coords = rng.integers(0, [6, 7, 8], size=(40, 3)).T
    asp.write(tmp_path / "t.tns", asp.Tensor.from_coo(coords, rng.random(40), (6, 7, 8)))
    return tmp_path


def test_demo_checks_every_kernel_on_small_files(tmp_path):
    result = CliRunner().invoke(main, ["demo", "--data", str(_demo_folder(tmp_path)), "--limit", "10"])
    assert result.exit_code == 0, result.output
    assert "MISMATCH" not in result.output
    # 5 matrices x 5 conversions, 4 square x 3 kernels + 1 wide x 2; the tensor: 4 conversions, 2 kernels
    assert result.output.count("  ok") == 25 + 14 + 6
    assert result.output.splitlines()[-1].startswith("6 tensors, 29 conversions and 16 kernels, each result equal")


def test_demo_fails_when_a_kernel_is_wrong(tmp_path, monkeypatch):
    """The demo's check is real: one kernel whose result is off in one entry ends it with status 1."""
    evaluate = api.evaluate

    def off_by_one(expression, **arguments):
        result = evaluate(expression, **arguments)
        if not expression.startswith("C(i,j) = A(i,k) * B(k,j)"):
            return result
        coords, values = result.to_coo()
        values[-1] += 1.0
        return asp.Tensor.from_coo(coords, values, result.shape, format="csr")

    monkeypatch.setattr(api, "evaluate", off_by_one)
    asp.write(tmp_path / "square.mtx", asp.Tensor.from_scipy(_sparse(np.random.default_rng(6), (20, 20), 0.2), "csr"))
    result = CliRunner().invoke(main, ["demo", "--data", str(tmp_path)])
    assert result.exit_code == 1
    last = result.output.splitlines()[-1]
    assert "C(i,j) = A(i,k) * B(k,j)" in last and last.endswith("MISMATCH")


def test_run_refuses_an_output_name_before_computing(tmp_path, monkeypatch):
    """A .txt name, or a .mtx file for a vector, is refused before any kernel is compiled or run."""
    def never(*arguments, **options):
        raise AssertionError("compiled a kernel whose result cannot be written")

    monkeypatch.setattr(api, "compile", never)
    spmv = ["y(i) = A(i,j) * x(j)", "-i", f"A={_write_matrix(tmp_path / 'A.mtx', np.eye(2))}",
            "-i", f"x={_write_vector(tmp_path / 'x.tns', [1.0, 2.0])}"]
    assert ".tns or .tns.gz" in _one_line_and_status_2(_run(*spmv, "-o", str(tmp_path / "y.txt")))
    assert "matrix for a .mtx" in _one_line_and_status_2(_run(*spmv, "-o", str(tmp_path / "y.mtx")))
    assert not (tmp_path / "y.txt").exists() and not (tmp_path / "y.mtx").exists()


def test_no_arguments_still_show_the_help():
    """click shows the help for a bare `autosparse` (a usage error in click 8.2+): kept, not one line."""
    result = CliRunner().invoke(main, [])
    assert "Commands:" in result.output and "--version" in result.output
