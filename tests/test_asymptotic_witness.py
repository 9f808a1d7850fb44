"""Every dominated program's witness, checked twice: by containment of the costs, and by compiling both
programs with instrumented loops and counting the iterations each runs on random operands (by default on a
sample of the dominated programs and every witness they name; all of them with `-m grid`)."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.autoschedule.asymptotic.realise import hashed_levels
from autosparse.autoschedule.front import Candidate
from autosparse.notation import accesses
from kernel_cases import sample

KERNELS = {
    "SpMV": ("a(i) = B(i,j) * c(j)", {"B": "ds"}),
    "SpGEMM": ("A(i,j) = B(i,k) * C(j,k)", {"B": "ds", "C": "ds", "A": "ds"}),
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"}),
}
EXTENTS = {"i": 40, "j": 30, "k": 35}


def _operands(front, seed, density, skewed):
    """Random operands; `skewed` adds a full first row and column to every sparse one."""
    rng = np.random.default_rng(seed)
    operands, nonzeros = {}, 0
    for access in accesses(front.assignment.rhs):
        shape = tuple(EXTENTS[i.name] for i in access.indices)
        array = rng.random(shape) * (rng.random(shape) < density)
        sparse = not front.formats[access.tensor].is_dense
        if skewed and sparse:
            array[0, :] = array[:, 0] = 1.0
        nonzeros += np.count_nonzero(array) if sparse else 0
        operands[access.tensor] = asp.Tensor.from_numpy(array, format=front.formats[access.tensor])
    return operands, nonzeros + sum(EXTENTS[i] for i in {i.name for a in accesses(front.assignment.rhs)
                                                         for i in a.indices})


def _iterations(front, program, operands, cache):
    if program not in cache:
        cand = Candidate(program, front.search.costs[program], front.assignment, front.formats, front.search.model)
        kernel = asp.compile(str(front.assignment), formats={n: str(f) for n, f in front.formats.items()},
                             schedule=cand, instrument=True)
        kernel(**operands)
        cache[program] = sum(kernel.counts.values())
    return cache[program]


#: Dominated programs whose iterations are counted by default (each is a compiled kernel).
COUNTED = 16


@pytest.mark.parametrize("programs", ["sample", pytest.param("all", marks=pytest.mark.grid)])
@pytest.mark.parametrize("taco", [False, True], ids=["full", "taco"])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_witness_dominates_by_containment_and_by_counted_iterations(kernel, taco, programs):
    expression, formats = KERNELS[kernel]
    front = asp.autoschedule(expression, formats=formats, taco=taco)
    witnesses = front.search.witnesses
    if not taco:
        assert witnesses  # every kernel here has dominated programs in full mode
    frontier = {program for program, _ in front.search.frontier}
    costs = front.search.costs
    hashing = {p: hashed_levels(p, front.formats, front.assignment.lhs.tensor) for p in costs}
    for program, witness in witnesses.items():
        assert witness in frontier
        # Asymptotically cheaper, or as cheap with fewer hash-table levels (the default's second criterion).
        assert costs[witness] <= costs[program], f"{program} is not dominated by {witness}"
        assert costs[program].dominates(costs[witness]) or hashing[witness] < hashing[program]
        assert hashing[witness] <= hashing[program]

    checked = witnesses
    if programs == "sample":  # as many asymptotically dominated programs as ones only hashing more
        strict = [(p, w) for p, w in witnesses.items() if costs[p].dominates(costs[w])]
        hashed = [(p, w) for p, w in witnesses.items() if not costs[p].dominates(costs[w])]
        checked = dict(sample(strict, COUNTED // 2, kernel) + sample(hashed, COUNTED // 2, kernel))
    uniform, _ = _operands(front, seed=1, density=0.1, skewed=False)
    counted: dict = {}
    for program, witness in checked.items():
        # On random operands an asymptotically dominated program runs more loop iterations than its witness.
        if costs[program].dominates(costs[witness]):
            assert _iterations(front, witness, uniform, counted) < _iterations(front, program, uniform, counted), \
                f"{program} ran no more iterations than its witness {witness}"

    # Up to constant factors and the sunk cost of reading the operands, never fewer, even when skewed.
    skewed, sunk = _operands(front, seed=2, density=0.05, skewed=True)
    counted = {}
    for program, witness in checked.items():
        assert _iterations(front, witness, skewed, counted) <= 2 * (_iterations(front, program, skewed, counted) + sunk)
