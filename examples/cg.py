"""The conjugate gradient method for a symmetric positive definite matrix (such as bcsstk13).

Lazily an iteration is six kernels in three `compute` calls, against nine eager ones (`x + α·p` is a product
and a sum eagerly, one kernel lazily):
1. `A @ p` and `p·(A @ p)`: two kernels. The product is read by the dot product and by the update of r, so
   it is materialised; in one kernel the two would need a kernel with two results, which autosparse's
   kernels do not have (design31.md §6 risk 8). Fusing `p·(A @ p)` alone would compute `A @ p` twice.
2. `x + α·p`, `r' = r - α·(A @ p)` and `r'·r'`: three kernels, each update with its scaling; the dot
   product reads r', which is a result, so it is its own kernel.
3. `r' + β·p`: one kernel.
The step sizes α and β are quotients of two order-0 results, computed in Python between the calls.

    python examples/cg.py [matrix.mtx[.gz]]    # default: a generated SPD matrix
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def conjugate_gradient(matrix: sp.sparray, rhs: np.ndarray, tol: float = 1e-8, max_iterations: int = 1000, *,
                       lazy: bool = True):
    """x with `matrix @ x ≈ rhs` (the residual's norm at most `tol` times rhs's), and the iterations taken."""
    lift = asp.lazy if lazy else _identity
    a = lift(asp.Tensor.from_scipy(sp.csr_array(matrix, dtype=np.float64)))
    x, r = np.zeros(len(rhs)), np.asarray(rhs, dtype=np.float64).copy()
    p, rr = r.copy(), float(r @ r)
    goal = tol * tol * rr
    for iteration in range(1, max_iterations + 1):
        if rr <= goal:
            return x, iteration - 1
        product = xp.matmul(a, lift(p))
        ap, pap = asp.compute(product, xp.vecdot(lift(p), product))
        alpha = rr / pap
        residual = xp.subtract(lift(r), xp.multiply(alpha, lift(ap)))
        x, r, new = asp.compute(xp.add(lift(x), xp.multiply(alpha, lift(p))), residual, xp.vecdot(residual, residual))
        (p,) = asp.compute(xp.add(lift(r), xp.multiply(new / rr, lift(p))))
        rr = new
    return x, max_iterations


def _identity(value):
    return value


def main(argv: list[str]) -> None:
    if argv:
        matrix = asp.read(argv[0], format="csr").to_scipy()
    else:
        n = 20_000
        rng = np.random.default_rng(0)
        m = sp.random_array((n, n), density=2e-4, format="csr", rng=rng)
        matrix = sp.csr_array(m @ m.T + sp.diags_array(np.full(n, 10.0)))
    rhs = np.ones(matrix.shape[0])
    x, iterations = conjugate_gradient(matrix, rhs)
    residual = np.linalg.norm(matrix @ x - rhs) / np.linalg.norm(rhs)
    print(f"{matrix.shape[0]:,} rows, {matrix.nnz:,} entries: {iterations} iterations, "
          f"relative residual {residual:.1e}")


if __name__ == "__main__":
    main(sys.argv[1:])
