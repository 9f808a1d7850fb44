"""Layouts that level formats cannot express (Zhao et al. §2): packed triangular matrices. Each kernel
iterates the layout natively (the shape tests read the loops in the generated C) and equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp


def _triangle(n, seed, upper=False, density=0.6):
    rng = np.random.default_rng(seed)
    m = np.where(rng.random((n, n)) < density, rng.integers(1, 9, (n, n)).astype(float), 0.0)
    return np.triu(m) if upper else np.tril(m)


@pytest.mark.parametrize("name, upper", [("lower", False), ("upper", True)])
@pytest.mark.parametrize("n", [1, 2, 9])
def test_packed_triangular_round_trips(name, upper, n):
    m = _triangle(n, n, upper)
    tensor = asp.Tensor.from_numpy(m, format=name)
    assert str(tensor.format) == ("dt^" if upper else "dt")
    assert tensor.nnz == n * (n + 1) // 2  # every coordinate of the triangle is stored
    np.testing.assert_array_equal(tensor.to_numpy(), m)
    np.testing.assert_array_equal(tensor.to_format("csr").to_numpy(), m)
    assert tensor.to_format("csr").nnz == np.count_nonzero(m)  # zeros of the triangle are fill
    np.testing.assert_array_equal(asp.Tensor(tensor.shape, name, tensor.levels, tensor.vals).to_numpy(), m)


def test_packed_value_positions_follow_the_paper():
    """value(i, j) = data[i(i+1)/2 + j] for the lower triangle."""
    m = np.tril(np.arange(1.0, 17.0).reshape(4, 4))
    vals = asp.Tensor.from_numpy(m, format="lower").vals
    for i in range(4):
        for j in range(i + 1):
            assert vals[i * (i + 1) // 2 + j] == m[i, j]


def test_entries_outside_the_triangle_and_non_square_shapes_are_refused():
    with pytest.raises(asp.FormatError, match="on or below the diagonal"):
        asp.Tensor.from_numpy(np.ones((3, 3)), format="lower")
    with pytest.raises(asp.FormatError, match="on or above the diagonal"):
        asp.Tensor.from_numpy(np.tril(np.ones((3, 3))), format="upper")
    with pytest.raises(asp.FormatError, match="square"):
        asp.Tensor.from_numpy(np.zeros((3, 4)), format="lower")
    with pytest.raises(asp.FormatError, match="below a dense level"):
        asp.Format("st")


@pytest.mark.parametrize("name, upper", [("lower", False), ("upper", True)])
@pytest.mark.parametrize("n", [1, 5, 40])
def test_spmv_on_a_packed_triangle(name, upper, n):
    m = _triangle(n, 3, upper)
    x = np.random.default_rng(4).random(n)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": name})
    y = kernel(A=asp.Tensor.from_numpy(m, format=name), x=x)
    np.testing.assert_allclose(np.asarray(y), m @ x)
    # the triangle's own bounds: a row's segment from the row, no index array
    segment = "((i)) * N_j - ((i)) * (((i)) - 1) / 2" if upper else "((i)) * (((i)) + 1) / 2"
    assert segment in kernel.source and "pA2_base" in kernel.source and "A1_crd" not in kernel.source


@pytest.mark.parametrize("expression, reference", [
    ("C(i,j) = A(i,j) + B(i,j)", lambda a, b: a + b),
    ("C(i,j) = A(i,j) * B(i,j)", lambda a, b: a * b),
    ("y(i) = A(i,j) * B(i,j)", lambda a, b: (a * b).sum(axis=1)),
    ("C(i,k) = A(i,j) * B(j,k)", lambda a, b: a @ b),
])
@pytest.mark.parametrize("b_format", ["csr", "dense", "lower"])
def test_triangles_meet_other_formats(expression, reference, b_format):
    a = _triangle(8, 5)
    b = _triangle(8, 6) if b_format == "lower" else np.random.default_rng(6).random((8, 8)) * (
        np.random.default_rng(7).random((8, 8)) < 0.5)
    kernel = asp.compile(expression, formats={"A": "lower", "B": b_format})
    result = kernel(A=asp.Tensor.from_numpy(a, format="lower"), B=asp.Tensor.from_numpy(b, format=b_format))
    np.testing.assert_allclose(np.asarray(result), reference(a, b))


def test_a_triangle_cannot_be_split_by_positions():
    with pytest.raises(asp.ScheduleError, match="segment"):
        asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "lower"},
                    schedule="pos(j, jp, A(i,j))").source
