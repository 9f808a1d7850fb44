"""CP decomposition of a 3-way sparse tensor by alternating least squares: each mode's factor is the
matricised tensor times the Khatri-Rao product of the other two (MTTKRP), in autosparse, then solved
against the Hadamard product of their Gram matrices (rank × rank), in numpy.

MTTKRP for mode 0 is `M(i,r) = sum(j, sum(k, T(i,j,k) * C(k,r)) * B(j,r))`, written as a tensordot with one
factor, a product with the other (broadcast along the tensor's remaining mode) and a sum. Lazily that is
one kernel per mode, three an iteration: the tensordot and the product inline into the sum, and the inner
sum is taken around the dense factor, so the kernel is `einsum("ijk,kr,jr->ir")`'s one product walking the
tensor once in its storage order, the order-3 intermediate never stored. Eagerly it is three kernels per
mode, the intermediate (nonzero fibres × rank) stored between them.
The solves, the Gram matrices and the column norms are rank × rank or factor-sized work in numpy.

    python examples/cp_als.py [tensor.tns[.gz]] [rank]    # default: /work/shared/data/yelp.tns.gz, rank 8
"""

from __future__ import annotations

import sys

import numpy as np

import autosparse as asp
from autosparse import array as xp

DEFAULT = "/work/shared/data/yelp.tns.gz"


def cp_als(tensor: asp.Tensor, rank: int, iterations: int, seed: int = 0, *, lazy: bool = True):
    """The weights (rank) and factors (shape[m] × rank each) of a rank-`rank` CP model of the order-3
    `tensor` after `iterations` sweeps from random factors drawn with `seed`; factors' columns of unit norm."""
    lift = asp.lazy if lazy else _identity
    rng = np.random.default_rng(seed)
    factors = [rng.random((extent, rank)) for extent in tensor.shape]
    weights = np.ones(rank)
    operand = lift(tensor)
    for _ in range(iterations):
        for mode in range(3):
            (product,) = asp.compute(_mttkrp(operand, factors, mode, lift))
            grams = np.prod([f.T @ f for m, f in enumerate(factors) if m != mode], axis=0)
            solved = np.linalg.lstsq(grams, np.asarray(product).T, rcond=None)[0].T
            weights = np.linalg.norm(solved, axis=0)
            factors[mode] = solved / np.where(weights == 0, 1.0, weights)
    return weights, factors


def _mttkrp(tensor, factors: list, mode: int, lift):
    """The tensor matricised along `mode` times the Khatri-Rao product of the other modes' factors: the
    last other mode contracted by a tensordot, the first multiplied in and summed over."""
    first, last = (m for m in range(3) if m != mode)
    contracted = xp.tensordot(tensor, lift(factors[last]), axes=([last], [0]))  # modes: (mode, first) in order, rank
    position = 0 if first < mode else 1
    along = factors[first][:, None, :] if position == 0 else factors[first]
    return xp.sum(xp.multiply(contracted, lift(along)), axis=position)


def _identity(value):
    return value


def main(argv: list[str]) -> None:
    tensor = asp.read(argv[0] if argv else DEFAULT, format="csf")
    rank = int(argv[1]) if len(argv) > 1 else 8
    weights, factors = cp_als(tensor, rank, 10)
    coords, values = tensor.to_coo()
    model = np.einsum("r,nr,nr,nr->n", weights, *(f[c] for f, c in zip(factors, coords)))
    error = np.linalg.norm(model - values) / np.linalg.norm(values)
    print(f"{tensor.shape} tensor, {tensor.nnz:,} entries, rank {rank}: largest weights "
          f"{np.round(np.sort(weights)[::-1][:3], 2)}, relative error on the entries {error:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
