"""Kernels on 10⁹ × 10⁹ matrices with 10³ entries (int64 indices) run in a child process limited to 2 GB
of address space: nothing is densified — not the loops (rows are stepped, not counted), not the
workspace of SpGEMM (hashed once a dense one would be too large), not the result.

A CSR result's `pos` alone would take 8 GB for 10⁹ rows, so results are DCSR ("ss"), and SpMV reads and
writes compressed vectors. A CSR result is refused with MemoryLimitError before anything is allocated."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    import numpy as np
    import autosparse as asp

    n, rng = 10**9, np.random.default_rng(11)
    def matrix(seed):
        coords = np.random.default_rng(seed).integers(0, 1000, size=(2, 1000)) * (n // 1000)
        return asp.Tensor.from_coo(coords, rng.random(1000), (n, n), "dcsr", index_dtype=np.int64)
    def entries(tensor):
        coords, values = tensor.to_coo()
        return {tuple(c): v for c, v in zip(coords.T.tolist(), values.tolist())}

    A, B = matrix(1), matrix(2)
    a, b = entries(A), entries(B)
    x = asp.Tensor.from_coo(np.arange(0, n, n // 1000)[None, :], rng.random(1000), (n,), "s", index_dtype=np.int64)
    xs = entries(x)

    y = asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x, format="s")
    expected = {}
    for (i, j), v in a.items():
        if (j,) in xs:
            expected[(i,)] = expected.get((i,), 0.0) + v * xs[(j,)]
    got = entries(y)
    assert got.keys() == expected.keys() and all(abs(got[k] - expected[k]) < 1e-9 for k in got), "spmv"

    C = asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=A, B=B, format="dcsr")
    expected = dict(a)
    for key, v in b.items():
        expected[key] = expected.get(key, 0.0) + v
    got = entries(C)
    assert got.keys() == expected.keys() and all(abs(got[k] - expected[k]) < 1e-9 for k in got), "add"

    C = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=A, B=B, format="dcsr")
    expected = {}
    for (i, k), v in a.items():
        for (k2, j), w in b.items():
            if k == k2:
                expected[(i, j)] = expected.get((i, j), 0.0) + v * w
    got = entries(C)
    assert got.keys() == expected.keys() and all(abs(got[k] - expected[k]) < 1e-9 for k in got), "spgemm"
    assert C.index_dtype == np.int64

    try:
        asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=A, B=B, format="csr")
    except asp.MemoryLimitError as error:
        assert "memory limit" in str(error)
    else:
        raise AssertionError("a CSR result with 10**9 rows was allocated")
    print("ok")
""")


@pytest.mark.slow
def test_hypersparse_kernels_in_two_gigabytes():
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
