"""Random expressions, formats and inputs: a kernel's result matches numpy.einsum on dense copies, or the
kernel refuses with a documented AutosparseError subclass (never for cyclic storage orders outside a scoped
sum: the default schedule converts operands to concordant formats, and dense ones give way).

Expressions: 2-3 operands of orders 0-3 over the index variables i, j, k, l (extents 0-4), combined with +, -
and * under random parenthesisation. Formats: every valid d/s/u/q/c letter string for the operand's order,
in every mode order (COO and CSC-style included); the result dense, CSF or COO. The reference evaluates the
expression tree with numpy.einsum, one product term at a time, before any Tensor is built.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import autosparse as asp
from kernel_cases import Acc, Bin, Statement, _peer_math_guard, no_peer_math, reference, tolerance  # noqa: F401

INDICES = ("i", "j", "k", "l")


def _valid(letters: str, order: int) -> bool:
    try:
        asp.Format(letters, order=order)
    except asp.FormatError:
        return False
    return True


LETTERS = {order: [''.join(p) for p in itertools.product("dsuqc", repeat=order) if _valid(''.join(p), order)]
           for order in range(4)}


def coo_letters(order: int) -> str:
    return "u" if order == 1 else "u" + "c" * (order - 2) + "q"


@st.composite
def operand_format(draw, order: int) -> str:
    if order == 0:
        return "dense"
    letters = draw(st.sampled_from(LETTERS[order]))
    modes = draw(st.permutations(range(order)))
    if tuple(modes) == tuple(range(order)):
        return letters
    return "".join(f"{letter}{mode}" for letter, mode in zip(letters, modes))


@st.composite
def trees(draw, leaves: list):
    """A random binary tree over `leaves` (in this order) with + - * at the inner nodes."""
    if len(leaves) == 1:
        return leaves[0]
    split = draw(st.integers(1, len(leaves) - 1))
    op = draw(st.sampled_from("+-*"))
    return Bin(op, draw(trees(leaves[:split])), draw(trees(leaves[split:])))


@st.composite
def statements(draw) -> Statement:
    count = draw(st.integers(2, 3))
    leaves = []
    for name in "ABC"[:count]:
        order = draw(st.integers(0, 3))
        indices = tuple(draw(st.permutations(INDICES))[:order])
        leaves.append(Acc(name, indices))
    rhs = draw(trees(leaves))
    used = sorted({i for leaf in leaves for i in leaf.indices})
    out_order = draw(st.integers(0, min(3, len(used))))
    out = tuple(draw(st.permutations(used))[:out_order]) if used else ()
    return Statement(Acc("Z", out), rhs)


@st.composite
def problems(draw):
    statement = draw(statements())
    extents = {i: draw(st.integers(0, 4), label=f"extent of {i}") for i in statement.indices}
    formats = {name: draw(operand_format(len(indices)), label=f"format of {name}")
               for name, indices in statement.operands.items()}
    out_order = len(statement.lhs.indices)
    if out_order:
        formats["Z"] = draw(st.sampled_from(["dense", "s" * out_order, coo_letters(out_order)]), label="format of Z")
    value_dtype = draw(st.sampled_from([np.float64, np.float32]))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    density = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    explicit = draw(st.booleans(), label="explicit zeros")
    seed = draw(st.integers(0, 2**32 - 1))
    return statement, extents, formats, value_dtype, index_dtype, density, explicit, seed


def make_operands(statement, extents, formats, value_dtype, index_dtype, density, explicit, seed):
    """Dense numpy copies, and the operands autosparse receives, built from them (stored zeros kept when
    `explicit`)."""
    rng = np.random.default_rng(seed)
    arrays, operands = {}, {}
    for name, indices in statement.operands.items():
        shape = tuple(extents[i] for i in indices)
        size = int(np.prod(shape, dtype=np.int64))
        stored = np.flatnonzero(rng.random(size) < density) if density < 1 else np.arange(size)
        values = (rng.integers(1, 64, size=len(stored)) / 8).astype(value_dtype)
        if explicit and len(values):
            values[rng.random(len(values)) < 0.3] = 0
        if not shape:
            array = np.asarray(values[0] if len(values) else 0, dtype=value_dtype)
            arrays[name], operands[name] = array, array
            continue
        coords = np.array(np.unravel_index(stored, shape), dtype=np.int64).reshape(len(shape), len(stored))
        array = np.zeros(shape, dtype=value_dtype)
        array[tuple(coords)] = values
        arrays[name] = array
        if explicit:
            operands[name] = asp.Tensor.from_coo(coords, values, shape, format=formats[name], index_dtype=index_dtype)
        else:
            operands[name] = asp.Tensor.from_numpy(array, format=formats[name], index_dtype=index_dtype)
    return arrays, operands


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problem=problems())
def test_random_kernels_match_numpy_or_refuse(problem):
    statement, extents, formats, value_dtype, index_dtype, density, explicit, seed = problem
    expression = str(statement)
    note(f"{expression}  formats={formats}  extents={extents}")
    arrays, operands = make_operands(*problem)
    expected = reference(statement, arrays, extents)
    scale = reference(statement, arrays, extents, magnitude=True)
    result_dtype = np.result_type(*(a.dtype for a in arrays.values()))

    try:
        kernel = asp.compile(expression, formats=formats)
        with no_peer_math():
            result = kernel(**operands)
    except asp.AutosparseError as error:
        assert type(error) is not asp.AutosparseError, f"an undocumented error: {error}"
        # a scoped sum's loops are placed by its own rules, and its operands are not converted
        assert "cyclic" not in str(error) or asp.notation.parse(expression).scoped, error
        event(f"refused: {type(error).__name__}")
        return

    rtol, atol = tolerance(result_dtype)
    atol *= max(1.0, float(np.max(scale, initial=0.0)))
    if statement.lhs.indices and asp.Format(formats["Z"], order=len(statement.lhs.indices)).is_dense:
        assert isinstance(result, np.ndarray) and result.shape == expected.shape  # a dense result is an array
        assert result.dtype == result_dtype
        actual = result
    elif statement.lhs.indices:
        assert isinstance(result, asp.Tensor)
        assert result.shape == expected.shape
        assert result.format == asp.Format(formats["Z"], order=len(statement.lhs.indices))
        assert result.dtype == result_dtype
        try:
            asp.Tensor(result.shape, result.format, [dict(level) for level in result.levels], np.array(result.vals))
        except asp.FormatError as error:
            raise AssertionError(f"the kernel's output is not valid {result.format} storage: {error}") from None
        actual = result.to_numpy()
    else:
        assert isinstance(result, float)
        actual = np.asarray(result)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=expression)
    event("matched")
