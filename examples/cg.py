"""The conjugate gradient method for a symmetric positive definite matrix (such as bcsstk13).

Lazily an iteration is a fused function (`asp.fused`): traced once into six kernels, which every later
iteration runs one after another with nothing recorded or planned again, against nine eager ones (`x + α·p`
is a product and a sum eagerly, one kernel lazily):
1. `A @ p`: it is read by the dot product and by the update of r, so it is materialised; with `p·(A @ p)` in
   one kernel it would need a kernel with two results, which autosparse's kernels do not have (design31.md
   §6 risk 8). Fusing `p·(A @ p)` alone would compute `A @ p` twice.
2. `α = r·r / p·(A @ p)`: an order-0 kernel, read by both updates.
3. `x + α·p` and `r' = r - α·(A @ p)`: a kernel each, with its scaling.
4. `r'·r'`: r' is a result, so the dot product is its own kernel; and `r' + (r'·r' / r·r)·p`.
Eagerly the step sizes α and β are Python numbers; in the fused step they are arrays of order 0.

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
    step = fused_iteration if lazy else _iteration
    a = asp.Tensor.from_scipy(sp.csr_array(matrix, dtype=np.float64))
    x, r = np.zeros(len(rhs)), np.asarray(rhs, dtype=np.float64).copy()
    p, rr = r.copy(), float(r @ r)
    goal = tol * tol * rr
    for iteration in range(1, max_iterations + 1):
        if rr <= goal:
            return x, iteration - 1
        x, r, p, rr = step(a, x, r, p, rr)
    return x, max_iterations


def _iteration(a, x, r, p, rr):
    """x, r, p and r·r after one iteration."""
    product = xp.matmul(a, p)
    alpha = rr / xp.vecdot(p, product)
    r = xp.subtract(r, xp.multiply(alpha, product))
    new = xp.vecdot(r, r)
    return xp.add(x, xp.multiply(alpha, p)), r, xp.add(r, xp.multiply(new / rr, p)), new


fused_iteration = asp.fused(_iteration)


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
