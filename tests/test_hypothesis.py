"""Random tensors in random formats: building, converting and leaving agree with a numpy reference."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosparse as asp
from conftest import INDEX_DTYPES, VALUE_DTYPES, assert_same_tensor, coo_letters, make_values, reference_dense


@st.composite
def formats(draw, order: int) -> str:
    if draw(st.booleans()) and order:
        letters = coo_letters(order)
    else:
        letters = "".join(draw(st.sampled_from("dsh")) for _ in range(order))
    modes = draw(st.permutations(range(order)))
    return "".join(f"{letter}{mode}" for letter, mode in zip(letters, modes))


@st.composite
def tensors(draw):
    order = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=order, max_size=order)))
    count = 0 if 0 in shape else draw(st.integers(0, 30))
    coords = np.array([[draw(st.integers(0, d - 1)) for d in shape] for _ in range(count)], dtype=np.int64)
    coords = coords.T.reshape(order, count)
    dtype = draw(st.sampled_from(VALUE_DTYPES))
    values = make_values(np.random.default_rng(draw(st.integers(0, 2**16))), count, dtype)
    values[np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype=bool)] = 0
    return coords, values, shape, dtype


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=tensors())
def test_random_tensors_in_random_formats(data, case):
    coords, values, shape, dtype = case
    source = data.draw(formats(len(shape)), label="source")
    target = data.draw(formats(len(shape)), label="target")
    index_dtype = data.draw(st.sampled_from(INDEX_DTYPES), label="index dtype")
    expected = reference_dense(coords, values, shape, dtype)

    tensor = asp.Tensor.from_coo(coords, values, shape, source, index_dtype=index_dtype)
    np.testing.assert_array_equal(tensor.to_numpy(), expected)
    converted = tensor.to_format(target, index_dtype=index_dtype)
    np.testing.assert_array_equal(converted.to_numpy(), expected)
    assert converted.format == asp.Format(target)
    assert_same_tensor(converted, asp.Tensor.from_numpy(expected, target, index_dtype=index_dtype)
                       if converted.format.is_dense else converted)
    # Converting is independent of the route: through the target or straight from the pruned entries.
    assert_same_tensor(converted.prune(), asp.Tensor.from_numpy(expected, target, index_dtype=index_dtype))
    out_coords, out_values = converted.to_coo()
    np.testing.assert_array_equal(reference_dense(out_coords, out_values, shape, dtype), expected)
