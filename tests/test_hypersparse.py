"""A 10⁹ × 10⁹ matrix with 1,000 entries lives in memory proportional to its entries: it converts between
every format without a dense level inside a process limited to 2 GB of address space, and formats that
would need dense storage are refused with MemoryLimitError before anything is allocated."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autosparse as asp

SPARSE_FORMATS = ["".join(f"{l}{m}" for l, m in zip(letters, modes))
                  for letters in itertools.product("sh", repeat=2) for modes in ((0, 1), (1, 0))] + ["uq", "u1q0"]

CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    import numpy as np
    import autosparse as asp

    n, rng = 10**9, np.random.default_rng(7)
    coords = rng.integers(0, n, size=(2, 1000))
    values = rng.random(1000)
    reference = asp.Tensor.from_coo(coords, values, (n, n), "coo")
    expected = {tuple(c): v for c, v in zip(reference.to_coo()[0].T.tolist(), reference.to_coo()[1])}
    for source in FORMATS:
        tensor = reference.to_format(source)
        storage = sum(a.nbytes for level in tensor.levels for a in level.values()) + tensor.vals.nbytes
        assert storage < 200_000, (source, storage)
        for target in FORMATS:
            coords_out, values_out = tensor.to_format(target).to_coo()
            got = {tuple(c): v for c, v in zip(coords_out.T.tolist(), values_out)}
            assert got == expected, (source, target)
    for dense_level in ("csr", "csc", "sd"):
        try:
            reference.to_format(dense_level)
        except asp.MemoryLimitError as error:
            assert "memory limit" in str(error)
        else:
            raise AssertionError(dense_level + " was allocated")
    try:
        reference.to_numpy()
    except asp.MemoryLimitError:
        pass
    else:
        raise AssertionError("densified")
    print("ok", len(FORMATS))
""")


@pytest.mark.slow
def test_hypersparse_matrix_in_two_gigabytes():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("AUTOSPARSE_MEMORY_LIMIT", None)
    script = f"FORMATS = {SPARSE_FORMATS!r}\n" + CHILD
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", str(len(SPARSE_FORMATS))]


def test_memory_limit_is_configurable():
    tensor = asp.Tensor.from_coo([[0], [0]], [1.0], (1000, 1000), "dcsr")
    asp.set_memory_limit(1000)
    assert asp.memory_limit() == 1000
    with pytest.raises(asp.MemoryLimitError, match="more than the memory limit of 1,000 bytes"):
        tensor.to_numpy()
    with pytest.raises(asp.MemoryLimitError):
        tensor.to_format("csc")
    asp.set_memory_limit(None)
    assert tensor.to_format("csc").nnz == 1
    with pytest.raises(asp.MemoryLimitError, match="positive"):
        asp.set_memory_limit(0)


def test_huge_dense_levels_of_a_3d_tensor_are_refused():
    tensor = asp.Tensor.from_coo(np.array([[5], [6], [7]]), [2.0], (10**6, 10**6, 10**6), "sss")
    assert len(tensor.to_format("sds").levels[2]["pos"]) == 10**6 + 1  # a dense level of a million: allowed
    with pytest.raises(asp.MemoryLimitError):
        tensor.to_format("dds")
    assert tensor.to_format("hhs").to_coo()[1].tolist() == [2.0]
