"""Compile-time pruning, stages 1–3 of SparseAuto (Dias et al. §5.3).

Stage 1 drops schedules whose largest temporary has `max_memory_depth` + 1 or more dimensions; stage 2
keeps the schedules whose (loop depth, memory depth) no other schedule beats in one and ties or beats
in the other; both work on the space's histograms (`space.py`). Stage 3 groups the survivors by their
symbolic (time, memory) and drops a group that another group dominates, deciding with Z3 over the
sizes the constraints allow.

Two readings of "dominates" are offered. The default, `"everywhere"`, drops `s` when some `c` is no
worse in time and in memory for every allowed size and strictly worse somewhere: the paper's prose
("for all possible loop bounds and sparsities … and there is no set … for which s is better"). The
paper's Listing 1, `"literal"`, drops `s` when `c` beats it somewhere and `s` never beats `c`; as
written, a schedule with no temporary then removes every schedule with one that is not faster
everywhere — on the Listing's own pair it removes Fig. 5(e), the fastest schedule of the paper's first
motivating case — so it is available to reproduce that behaviour, not as the default. A solver answer
of `unknown` (or a timeout) keeps both groups, as does a question the solver's deadline leaves
unasked (the anytime search): stage 3 cut short keeps a superset of what it would keep.

The literal rule also keeps one placement of an input whose indices are all loops fused around a
`where` (kernel 1's B(i,j) under `i, j′⟨t; …⟩`): it multiplies the same, with the same costs, in the
producer or in the consumer, and the paper's Table 3 counts the schedules that differ only there as one
(its Table 2 puts the input in the producer). docs/notes/autoschedule-counts.md has the counts.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from ...errors import AutosparseError
from ...format import Format
from ...cin.ast import Forall
from ...schedule.big import Factor, Node, Where
from .constraints import inferred, parse_constraint
from .cost import Costs
from .poly import Poly, Symbol

RULES = ("everywhere", "literal")


def pareto_depths(histogram: Mapping[tuple[int, int], int], max_memory_depth: int) -> set[tuple[int, int]]:
    """Stages 1 and 2 on (loop depth, memory depth) pairs."""
    kept = [d for d, n in histogram.items() if n and d[1] <= max_memory_depth]
    return {d for d in kept if not any((o[0] < d[0] and o[1] <= d[1]) or (o[0] <= d[0] and o[1] < d[1])
                                       for o in kept)}


class Solver:
    """Z3 over the sizes of one expression: a Real per size symbol, every size at least 1, the
    inferred facts of the sparse tensors' levels and the user's constraints. Counts its queries, the
    answers it could not give in `timeout_ms`, and those it did not give because `deadline` (a
    `time.perf_counter()` value, or None) came first."""

    def __init__(self, sparse: Mapping[str, Factor], formats: Mapping[str, Format], indices: Sequence[str],
                 constraints: Sequence[str] = (), timeout_ms: int = 2000):
        import z3

        self.z3 = z3
        self.timeout_ms = timeout_ms
        self.queries = self.unknown = self.skipped = 0
        self.deadline: float | None = None
        self._variables: dict[Symbol, object] = {}
        self._positive: list = []
        self._facts = [parse_constraint(c, sparse, formats, indices, self.term) for c in constraints]
        self._facts += inferred(sparse, formats, self.term)
        if self.satisfiable() is False:
            raise AutosparseError(f"Expected constraints some sizes satisfy, but {list(constraints)} contradict "
                                  f"each other or the tensors' formats")

    def term(self, poly: Poly):
        for symbol in poly.symbols - self._variables.keys():
            self._variables[symbol] = self.z3.Real(str(symbol))
            self._positive.append(self._variables[symbol] >= 1)
        return poly.to_z3(self._variables)

    def asks(self) -> bool:
        """Whether the deadline leaves time to ask a question; where it does not, one more question
        counts as skipped (the caller need not build it)."""
        if self.deadline is None or time.perf_counter() < self.deadline:
            return True
        self.skipped += 1
        return False

    def satisfiable(self, *facts) -> bool | None:
        """True, False, or None where Z3 cannot tell in time."""
        timeout = self.timeout_ms
        if self.deadline is not None:
            timeout = min(timeout, int((self.deadline - time.perf_counter()) * 1000))
            if timeout <= 0:
                self.skipped += 1
                return None
        solver = self.z3.Solver()
        solver.set("timeout", timeout)
        solver.add(*self._facts, *facts, *self._positive)
        self.queries += 1
        answer = solver.check()
        if answer == self.z3.unknown:
            if timeout < self.timeout_ms:
                self.skipped += 1
            else:
                self.unknown += 1
            return None
        return answer == self.z3.sat


def dominated(groups: Sequence[tuple[Poly, Poly]], solver: Solver, rule: str = "everywhere",
              progress: Callable[[int, int], None] | None = None) -> set[int]:
    """The positions of the (time, memory) groups stage 3 removes (`progress(done, total)` after each
    group is compared with the others)."""
    if rule not in RULES:
        raise AutosparseError(f"Expected a stage-3 rule among {RULES}, but found {rule!r}")
    z3 = solver.z3
    terms = [(solver.term(t), solver.term(m)) for t, m in groups]
    removed: set[int] = set()
    for s, (ts, ms) in enumerate(terms):
        for c, (tc, mc) in enumerate(terms):
            if c == s or c in removed or s in removed:
                continue
            if rule == "everywhere":
                if _no_worse_termwise(groups[c], groups[s]) or (
                        solver.asks() and solver.satisfiable(z3.Or(ts < tc, ms < mc)) is False
                        and solver.satisfiable(z3.Or(ts > tc, ms > mc))):
                    removed.add(s)
            elif solver.asks():
                worse = solver.satisfiable(z3.Or(z3.And(ts >= tc, ms > mc), z3.And(ts > tc, ms >= mc)))
                better = solver.satisfiable(z3.Or(z3.And(ts < tc, ms <= mc), z3.And(ts <= tc, ms < mc)))
                if worse and better is False:
                    removed.add(s)
                elif worse is False and better:
                    removed.add(c)
        if progress is not None:
            progress(s + 1, len(terms))
    return removed


def _no_worse_termwise(c: tuple[Poly, Poly], s: tuple[Poly, Poly]) -> bool:
    """c <= s coefficient by coefficient in time and memory, and c != s: then, with every size at
    least 1, c is no worse anywhere and strictly better everywhere it differs (no solver needed)."""
    return c != s and c[0].dominated_termwise_by(s[0]) and c[1].dominated_termwise_by(s[1])


def one_placement(schedules: Sequence[tuple[Node, Costs]], inputs: set[str]) -> list[tuple[Node, Costs]]:
    """`schedules` without those that differ from a kept one only in the side of a `where` an input
    bound by the loops around it sits on; of each such family the one with those inputs in producers."""
    families: dict[tuple, tuple[int, int]] = {}
    for position, (big, _) in enumerate(schedules):
        key, in_consumers = _placement(big, inputs, (), None, False)
        if key not in families or in_consumers < families[key][0]:
            families[key] = (in_consumers, position)
    kept = {position for _, position in families.values()}
    return [entry for position, entry in enumerate(schedules) if position in kept]


def _placement(node: Node, inputs: set[str], loops: tuple[str, ...], fused: tuple[str, ...] | None,
               consumer: bool) -> tuple[tuple, int]:
    """`node` as a key without the inputs bound by the loops `fused` around the nearest `where`, and how
    many of those it places in a consumer."""
    if isinstance(node, Forall):
        key, count = _placement(node.body, inputs, (*loops, node.index), fused, consumer)
        return ("forall", node.index, key), count
    if isinstance(node, Where):
        producer, in_producer = _placement(node.producer, inputs, loops, loops, False)
        consumer_key, in_consumer = _placement(node.consumer, inputs, loops, loops, True)
        return ("where", node.temporary, producer, consumer_key), in_producer + in_consumer
    movable = [f for f in node.factors
               if fused is not None and f.tensor in inputs and set(f.indices) <= set(fused)]
    rest = tuple(sorted(f for f in node.factors if f not in movable))
    return ("compute", node.lhs, rest), len(movable) if consumer else 0
