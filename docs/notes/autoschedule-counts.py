"""Figure 6's three counts that `paper=True` does not give, reproduced by imitating two behaviours of
Pigeon.jl's cost analysis (src/lower_asymptote.jl and src/transform_concordize.jl at commit 5701085)
in autosparse's, as docs/notes/autoschedule-counts.md explains. A check, not a feature: it patches
private functions of the asymptotic analysis for the length of one search.

    PYTHONPATH=src:bench python docs/notes/autoschedule-counts.py

prints, per kernel and mode, autosparse's frontier (distinct / every copy) and the same with Pigeon.jl's
two behaviours: SpMTTKRP TACO 20 -> 23, SpGEMM2 TACO 2 -> 4, SpGEMMH full 156 / 300 -> 108 / 204, the
paper's 23, 4 and 204; the counts that already agree stay as they are.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import autosparse as asp
from autosparse.autoschedule.asymptotic import analysis, cost
from autosparse.cin import rewrite
from autosparse.cin.ast import Assign, Forall, Where
from autosparse_bench.asymptotic_counts import KERNELS

CASES = [("SpMV", True), ("SpMV", False), ("SpMV2", True), ("SpMV2", False), ("SpGEMM", True),
         ("SpGEMM", False), ("SpGEMM2", True), ("SpGEMM2", False), ("SpGEMMH", True), ("SpGEMMH", False),
         ("SpMTTKRP", True)]


def rotated(indices: tuple[str, ...], loops: tuple[str, ...]) -> tuple[str, ...]:
    """Pigeon.jl's predicate for a read made concordant: it permutes the access's indices by σ (the
    sort of its indices by loop position) where σ⁻¹ is meant. The same for swaps; a rotation of three
    modes gets the wrong one (B(i,k,l) read as (l,i,k) is named B(k,l,i))."""
    if not set(indices) <= set(loops):
        return indices
    sigma = sorted(range(len(indices)), key=lambda p: loops.index(indices[p]))
    concordant = [indices[s] for s in sigma]
    return tuple(concordant[s] for s in sigma)


@dataclass(frozen=True)
class KeptConsumer:
    """A `where` whose producer was annihilated: Pigeon.jl's rule `x where pass => x` is commented out,
    so its consumer still runs, reading a temporary that is all zero."""

    consumer: object
    temporaries: frozenset

    def children(self):
        return (self.consumer,)

    def with_children(self, children):
        return KeptConsumer(children[0], self.temporaries)


@contextmanager
def pigeon_behaviours():
    loops_of: dict = {}
    originals = (cost.tasks, analysis._Interpreter.nonzero, analysis._Interpreter.statement, rewrite._where_without)

    def walk(node, loops):
        if isinstance(node, Forall):
            walk(node.body, (*loops, node.index))
        elif isinstance(node, Where):
            walk(node.consumer, loops)
            walk(node.producer, loops)
        else:
            loops_of.update((access, loops) for access in analysis.reads(node.rhs))

    def tasks(program, sparse, scoped=True):
        loops_of.clear()
        walk(program, ())
        return originals[0](program, sparse, scoped)

    def nonzero(self, access, bound):
        indices = rotated(access.indices, loops_of.get(access, ()))
        pattern = analysis.rename(self.state.get(access.tensor, analysis.TRUE),
                                  dict(zip(analysis._modes(len(indices)), indices)))
        return analysis.exists([i for i in dict.fromkeys(indices) if i not in bound], pattern)

    def statement(self, node, bound, guard):
        if isinstance(node, KeptConsumer):
            self.state.update((t, analysis.FALSE) for t in node.temporaries)
            node = node.consumer
        return originals[2](self, node, bound, guard)

    def where_without(node, absent):
        producer, consumer = rewrite.without(node.producer, absent), rewrite.without(node.consumer, absent)
        if consumer is None:
            return None
        if producer is None:
            written = frozenset(a.lhs.tensor for a in rewrite.walk(node.producer) if isinstance(a, Assign))
            return KeptConsumer(consumer, written)
        return node.with_children((consumer, producer))

    cost.tasks, analysis._Interpreter.nonzero = tasks, nonzero
    analysis._Interpreter.statement, rewrite._where_without = statement, where_without
    try:
        yield
    finally:
        (cost.tasks, analysis._Interpreter.nonzero, analysis._Interpreter.statement,
         rewrite._where_without) = originals


def frontier(name: str, taco: bool) -> str:
    expression, formats = KERNELS[name]
    front = asp.autoschedule(expression, formats=formats, taco=taco, paper=True)
    distinct, copies = (s.count for s in front.stages if s.name.startswith("7 "))
    return f"{distinct} / {copies}"


if __name__ == "__main__":
    print("| kernel | mode | autosparse (distinct / every copy) | with Pigeon.jl's two behaviours |")
    print("|---|---|---|---|")
    for name, taco in CASES:
        ours = frontier(name, taco)
        with pigeon_behaviours():
            theirs = frontier(name, taco)
        print(f"| {name} | {'taco' if taco else 'full'} | {ours} | {theirs} |", flush=True)
