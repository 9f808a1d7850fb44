"""Matrix Market and FROSTT files: every header variant, the shipped data, and exact write/read round trips."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import autosparse as asp
from conftest import assert_same_tensor

DATA = Path(os.environ.get("AUTOSPARSE_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SHIPPED = sorted(DATA.glob("*.gz")) if DATA.is_dir() else []


def write_text(path: Path, text: str) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as handle:
        handle.write(text)
    return path


@pytest.mark.parametrize("header,body,expected,dtype", [
    ("real general", "3 3 3\n1 1 1.5\n3 1 -2\n2 3 0\n", [[1.5, 0, 0], [0, 0, 0], [-2, 0, 0]], np.float64),
    ("real symmetric", "3 3 3\n1 1 1.5\n3 1 -2\n3 2 4\n", [[1.5, 0, -2], [0, 0, 4], [-2, 4, 0]], np.float64),
    ("real skew-symmetric", "2 2 1\n2 1 3\n", [[0, -3], [3, 0]], np.float64),
    ("pattern general", "2 3 2\n1 3\n2 1\n", [[0, 0, 1], [1, 0, 0]], np.float64),
    ("pattern symmetric", "2 2 2\n1 1\n2 1\n", [[1, 1], [1, 0]], np.float64),
    ("integer general", "2 2 2\n1 2 7\n2 2 -4\n", [[0, 7], [0, -4]], np.int64),
    ("complex general", "2 2 2\n1 1 1 2\n2 1 0 -1\n", [[1 + 2j, 0], [-1j, 0]], np.complex128),
    ("complex hermitian", "2 2 2\n1 1 3 0\n2 1 1 2\n", [[3, 1 - 2j], [1 + 2j, 0]], np.complex128),
])
@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
def test_matrix_market_variants(tmp_path, header, body, expected, dtype, suffix):
    path = write_text(tmp_path / f"m{suffix}", f"%%MatrixMarket matrix coordinate {header}\n% comment\n{body}")
    tensor = asp.read(path)
    assert tensor.format == "csr" and tensor.dtype == dtype
    np.testing.assert_array_equal(tensor.to_numpy(), np.array(expected, dtype=dtype))
    asp.write(tmp_path / f"back{suffix}", tensor)
    assert_same_tensor(asp.read(tmp_path / f"back{suffix}"), tensor)


def test_matrix_market_explicit_zero_and_array_files(tmp_path):
    tensor = asp.read(write_text(tmp_path / "z.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 0\n2 2 5\n"))
    assert tensor.nnz == 2 and tensor.vals.tolist() == [0.0, 5.0]
    dense = asp.read(write_text(tmp_path / "a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n"))
    assert dense.format == "dense"
    np.testing.assert_array_equal(dense.to_numpy(), [[1, 3], [2, 4]])
    assert asp.read(tmp_path / "z.mtx", format="coo").format == "coo"


@pytest.mark.parametrize("text,message", [
    ("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n", "Matrix Market"),
    ("not a banner\n", "Matrix Market"),
])
def test_malformed_matrix_market(tmp_path, text, message):
    with pytest.raises(asp.FormatError, match=message):
        asp.read(write_text(tmp_path / "bad.mtx", text))


def test_frostt_reading(tmp_path):
    text = "# a comment\n1 2 3 1.5\n2 1 1 -2\n\n2 1 1 0.5\n"
    tensor = asp.read(write_text(tmp_path / "t.tns.gz", text))
    assert tensor.shape == (2, 2, 3) and tensor.format == asp.Format("coo", order=3)
    expected = np.zeros((2, 2, 3))
    expected[0, 1, 2], expected[1, 0, 0] = 1.5, -1.5  # duplicates add up
    np.testing.assert_array_equal(tensor.to_numpy(), expected)
    assert asp.read(tmp_path / "t.tns.gz", shape=(5, 5, 5), format="csf").shape == (5, 5, 5)


@pytest.mark.parametrize("text,message", [
    ("1 2 x\n", "Expected lines"),
    ("0 1 1.0\n", "1-based"),
    ("1.5 1 1.0\n", "1-based"),
    ("1e30 1 1.0\n", "1-based"),
    ("inf 1 1.0\n", "1-based"),
    ("1\n", "1 to 64 coordinates"),
    ("", "shape"),
])
def test_frostt_errors(tmp_path, text, message):
    with pytest.raises((asp.FormatError, asp.ShapeError), match=message):
        asp.read(write_text(tmp_path / "bad.tns", text))


def test_frostt_exact_round_trip_of_large_values_and_coordinates(tmp_path):
    tensor = asp.Tensor.from_coo([[2**31 - 1, 5]], np.array([2**53 + 1, -7]), (2**31,))
    assert tensor.index_dtype == np.int32
    asp.write(tmp_path / "big.tns", tensor)
    assert_same_tensor(asp.read(tmp_path / "big.tns"), tensor)
    with pytest.raises(asp.FormatError, match="scalar"):
        asp.write(tmp_path / "s.tns", asp.Tensor.from_numpy(np.float64(5.0)))


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_frostt_round_trip_keeps_shape_and_values(tmp_path, order, dtype):
    rng = np.random.default_rng(order)
    shape = tuple(range(3, 3 + order))
    coords = np.vstack([rng.integers(0, d - 1, size=20) for d in shape])  # the last slices stay empty
    values = (rng.random(20) * 100 if dtype == np.int64 else rng.standard_normal(20) / 3).astype(dtype)
    tensor = asp.Tensor.from_coo(coords, values, shape)
    asp.write(tmp_path / "t.tns", tensor)
    assert_same_tensor(asp.read(tmp_path / "t.tns"), tensor)  # shape, dtype and bit-exact values


def test_write_errors(tmp_path):
    matrix = asp.Tensor.from_numpy(np.eye(2), "csr")
    with pytest.raises(asp.FormatError, match=r"\.mtx, \.mtx\.gz, \.tns or \.tns\.gz"):
        asp.write(tmp_path / "m.txt", matrix)
    with pytest.raises(asp.FormatError, match="matrix for a .mtx"):
        asp.write(tmp_path / "t.mtx", asp.Tensor.from_numpy(np.ones((2, 2, 2)), "csf"))
    with pytest.raises(asp.FormatError, match="complex"):
        asp.write(tmp_path / "c.tns", asp.Tensor.from_numpy(np.eye(2) * 1j, "csr"))
    with pytest.raises(asp.FormatError, match="autosparse Tensor"):
        asp.write(tmp_path / "m.mtx", np.eye(2))


@pytest.mark.slow
@pytest.mark.skipif(not SHIPPED, reason="../shared/data is not present")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_data_reads_and_writes_back(tmp_path, path):
    tensor = asp.read(path)
    if path.name.endswith(".mtx.gz"):
        reference = scipy.io.mmread(path).tocsr()  # independent reader: expanded, duplicates summed
        reference.sum_duplicates()
        assert tensor.shape == reference.shape
        np.testing.assert_array_equal(tensor.levels[1]["pos"], reference.indptr)
        np.testing.assert_array_equal(tensor.levels[1]["crd"], reference.indices)
        np.testing.assert_array_equal(tensor.vals, reference.data)
    else:
        with gzip.open(path, "rt") as handle:
            rows = [line.split() for line in handle if line.strip() and not line.startswith("#")]
        expected = {tuple(int(c) - 1 for c in row[:-1]): float(row[-1]) for row in rows}
        coords, values = tensor.to_coo()
        assert dict(zip(map(tuple, coords.T.tolist()), values.tolist())) == expected
    target = tmp_path / path.name
    asp.write(target, tensor)
    assert_same_tensor(asp.read(target), tensor)


# ----- hostile files: every one a clear error, checked before anything large is read or built -----------

BANNER = "%%MatrixMarket matrix coordinate real general\n"


@pytest.mark.parametrize("text,error,message", [
    ("3 3 1\n1 1 1.0\n", asp.FormatError, "starting with a banner"),  # aborted the interpreter in scipy
    ("", asp.FormatError, "starting with a banner"),
    ("%%MatrixMarket matrix coordinate real\n2 2 1\n1 1 1.0\n", asp.FormatError, "starting with a banner"),
    ("%%MatrixMarket vector coordinate real general\n2 2 1\n1 1 1.0\n", asp.FormatError, "starting with a banner"),
    ("%%MatrixMarket matrix coordinate quaternion general\n2 2 1\n", asp.FormatError, "known layout, field"),
    ("%%MatrixMarket matrix array pattern general\n2 2\n", asp.FormatError, "known layout, field"),
    (BANNER + "2 2\n1 1 1.0\n", asp.FormatError, "size line of 3"),
    (BANNER + "2 -2 1\n1 1 1.0\n", asp.FormatError, "size line of 3"),
    (BANNER + "2 x 1\n", asp.FormatError, "size line of 3"),
    (BANNER + f"{2**63} 2 1\n1 1 1.0\n", asp.FormatError, "below 2\\*\\*63"),
    (BANNER + "10 10 1000000000000\n1 1 1.0\n", asp.MemoryLimitError, "1,000,000,000,000 entries declared"),
    ("%%MatrixMarket matrix array real general\n1000000 1000000\n1\n", asp.MemoryLimitError, "entries declared"),
    (BANNER + "3 3 5\n1 1 1.0\n", asp.FormatError, "Truncated"),
    (BANNER + "3 3 1\n0 1 1.0\n", asp.FormatError, "out of bounds"),
    (BANNER + "3 3 1\n1 x 1.0\n", asp.FormatError, "Invalid integer"),
    (BANNER + "3 3 1\n99999999999999999999999 1 1.0\n", asp.FormatError, "out of range"),
    (BANNER + "3 3 1\n1 1 1.0\n2 2 2.0\n", asp.FormatError, "Too many lines"),
])
@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
def test_hostile_matrix_market_files(tmp_path, text, error, message, suffix):
    with pytest.raises(error, match=message):
        asp.read(write_text(tmp_path / f"bad{suffix}", text))


def test_matrix_market_header_line_and_size_limits(tmp_path):
    long_comment = BANNER + "%" + "x" * (1 << 16) + "\n2 2 1\n1 1 1.0\n"
    with pytest.raises(asp.FormatError, match="header lines of at most"):
        asp.read(write_text(tmp_path / "long.mtx", long_comment))
    path = write_text(tmp_path / "sym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n4 4 2\n1 1 1.0\n3 1 2.0\n")
    asp.set_memory_limit(4 * 48 - 1)  # two entries stored twice, 24 bytes each read, 2 copies: 192 bytes
    with pytest.raises(asp.MemoryLimitError, match="2 entries declared"):
        asp.read(path)
    asp.set_memory_limit(4 * 48)
    assert asp.read(path).nnz == 3
    asp.set_memory_limit(30)  # the file's 74 bytes pass the limit, whatever its header says
    with pytest.raises(asp.MemoryLimitError):
        asp.read(write_text(tmp_path / "empty.mtx", BANNER + "%" + "x" * 40 + "\n1 1 0\n"))


def test_describe_reads_only_checked_headers(tmp_path):
    assert asp.io.describe(write_text(tmp_path / "m.mtx", BANNER + "% c\n\n3 4 2\n1 1 1\n2 2 2\n")) == \
        ((3, 4), 2, np.float64, True)
    with pytest.raises(asp.FormatError, match="size line"):
        asp.io.describe(write_text(tmp_path / "bad.mtx", BANNER + "3 4 two\n"))
    with pytest.raises(asp.FormatError, match="integer coordinates"):
        asp.io.describe(write_text(tmp_path / "bad.tns", "1 x 2.0\n"))
    with pytest.raises(asp.FormatError, match="1 to 64 coordinates"):
        asp.io.describe(write_text(tmp_path / "wide.tns", " ".join(["1"] * 66) + "\n"))


@pytest.mark.parametrize("name", ["m.mtx.gz", "t.tns.gz"])
def test_damaged_gzip_files(tmp_path, name):
    text = BANNER + "2 2 1\n1 1 1.0\n" if name.startswith("m") else "1 1 1.0\n" * 500
    whole = gzip.compress(text.encode())
    (tmp_path / name).write_bytes(b"not gzip at all")
    with pytest.raises(asp.FormatError, match="complete gzip file"):
        asp.read(tmp_path / name)
    (tmp_path / name).write_bytes(whole[: len(whole) // 2])  # cut short: EOFError inside gzip
    with pytest.raises(asp.FormatError, match="complete gzip file"):
        asp.read(tmp_path / name)
    corrupt = bytearray(whole)
    corrupt[len(corrupt) // 2] ^= 0xFF
    (tmp_path / name).write_bytes(bytes(corrupt))
    with pytest.raises(asp.FormatError):
        asp.read(tmp_path / name)


def test_paths_that_are_not_files_keep_their_own_errors(tmp_path):
    (tmp_path / "d.tns").mkdir()
    with pytest.raises(IsADirectoryError):
        asp.read(tmp_path / "d.tns")
    with pytest.raises(FileNotFoundError):
        asp.read(tmp_path / "missing.mtx")
    with pytest.raises(IsADirectoryError):
        asp.write(tmp_path / "d.tns", asp.Tensor.from_numpy(np.eye(2), "csr"))


@pytest.mark.parametrize("columns", [66, 3001, 200_001])
def test_wide_frostt_lines_are_refused_at_once(tmp_path, columns):
    """A line of thousands of columns took time quadratic in them (a format of that many levels) and
    200,000 never finished; any order past MAX_ORDER is refused before a tensor is built."""
    path = write_text(tmp_path / "wide.tns", " ".join(["1"] * columns) + "\n")
    with pytest.raises(asp.FormatError, match=f"1 to 64 coordinates and a value per line .* found {columns} column"):
        asp.read(path)


def test_frostt_order_limit_is_inclusive(tmp_path):
    from autosparse.tensor import MAX_ORDER

    path = write_text(tmp_path / "t.tns", " ".join(["1"] * MAX_ORDER) + " 2.5\n")
    tensor = asp.read(path)
    assert tensor.order == MAX_ORDER and tensor.to_coo()[1].tolist() == [2.5]
    with pytest.raises(asp.ShapeError, match="at most 64 modes"):
        asp.read(path, shape=(1,) * (MAX_ORDER + 1))
