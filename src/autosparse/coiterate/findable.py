"""Whether a co-iteration strategy may find an operand's coordinates: the two unsatisfiability checks of
Zhao et al. (§4.3, Eq. 3 and 4), posed to Z3 over the operands' index-array properties.

A loop walks a driver's stored coordinates and, for each coordinate `i`, finds the position holding `i`
in another operand's segment. An operand's level is modelled as an uninterpreted function `crd` on the
positions of one segment [lo, hi), constrained by the level's properties (increasing, decreasing,
unique: strict or plain monotonicity, injectivity; and the range of every coordinate). Each strategy
needs one fact of that function, checked by refuting its negation:

- `merge` and `gallop` resume where the previous coordinate's search stopped. Eq. 3: for two driver
  iterations in loop order whose coordinates both occur, the second match never lies behind the first
  (else resuming skips it). Eq. 4: once the search passes a position whose coordinate comes after `i`
  in the driver's order, no later position holds `i` (else stopping there misses it).
- `binary` halves a segment: Eq. 4 in both directions, with no assumption on the driver's order.
- `hash` and `bitmap` map a coordinate to one position: the coordinate occurs at most once (injectivity);
  a bitmap also indexes an array by it, so every coordinate lies in [0, dim).

Answers depend on properties only, so they are memoised: Z3 runs while kernels are generated (once per
combination of properties in a process), never when a compiled kernel is called.
"""

from __future__ import annotations

from functools import lru_cache

from ..cin.ast import Strategy

#: What each strategy needs, in words, for the error that refuses it.
NEEDS = {
    Strategy.MERGE: "coordinates sorted in the order the loop visits them (increasing or decreasing), each once",
    Strategy.GALLOP: "sorted coordinates (increasing or decreasing, each once) and a driver that visits its own "
                     "in order",
    Strategy.BINARY: "sorted coordinates (increasing or decreasing), each once",
    Strategy.HASH: "each coordinate at most once",
    Strategy.BITMAP: "each coordinate at most once, within the dimension",
}


@lru_cache(maxsize=None)
def findable(strategy: Strategy, order: int, unique: bool, driver: int) -> bool:
    """Whether `strategy` finds coordinates in a level whose siblings come in `order` (+1 increasing,
    -1 decreasing, 0 none), each once when `unique`, for a driver whose coordinates come in order
    `driver` (likewise)."""
    import z3  # a compile-time dependency only

    crd = z3.Function("crd", z3.IntSort(), z3.IntSort())
    lo, hi, dim = z3.Ints("lo hi dim")
    a, b = z3.Ints("a b")
    inside = lambda *ps: z3.And(*[z3.And(lo <= p, p < hi) for p in ps])
    axioms = [lo >= 0, lo <= hi, dim >= 1]
    if order:  # positions in [lo, hi) hold coordinates monotone in the level's direction
        rises = (lambda x, y: x < y) if unique else (lambda x, y: x <= y)
        before = (lambda x, y: rises(x, y)) if order > 0 else (lambda x, y: rises(y, x))
        axioms.append(z3.ForAll([a, b], z3.Implies(z3.And(inside(a, b), a < b), before(crd(a), crd(b)))))
    if unique:
        axioms.append(z3.ForAll([a, b], z3.Implies(z3.And(inside(a, b), a != b), crd(a) != crd(b))))
    axioms.append(z3.ForAll([a], z3.Implies(inside(a), z3.And(0 <= crd(a), crd(a) < dim))))

    p, p2, i, i2 = z3.Ints("p p2 i i2")

    def refuted(*claims) -> bool:
        solver = z3.Solver()
        solver.set("timeout", 5000)
        solver.add(*axioms, inside(p, p2), *claims)
        return solver.check() == z3.unsat

    def sorted_for(scan: int) -> bool:
        """Eq. 4 for a search moving in position direction `scan` (+1 up, -1 down) for coordinate i: a
        position whose coordinate is past i (for a level ordered `order`) has no match beyond it."""
        past = (lambda x: x > i) if order * scan > 0 else (lambda x: x < i)
        beyond = p < p2 if scan > 0 else p2 < p
        return refuted(past(crd(p)), beyond, crd(p2) == i)

    once = refuted(p != p2, crd(p) == crd(p2))  # a coordinate has one position to find
    if strategy in (Strategy.MERGE, Strategy.GALLOP):
        if not driver or not order:
            return False
        scan = driver * order  # +1: forwards from lo; -1: backwards from hi - 1
        first = (lambda x, y: x < y) if driver > 0 else (lambda x, y: x > y)  # the driver meets x before y
        behind = p2 < p if scan > 0 else p2 > p
        eq3 = refuted(first(i, i2), crd(p) == i, crd(p2) == i2, behind)  # the next match is never behind
        return once and eq3 and sorted_for(scan)
    if strategy is Strategy.BINARY:
        return once and bool(order) and sorted_for(1) and sorted_for(-1)
    if strategy is Strategy.BITMAP:
        return once and refuted(z3.Or(crd(p) < 0, crd(p) >= dim))
    return once
