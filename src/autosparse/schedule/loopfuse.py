"""The two directives of SparseAuto (Dias et al. §4.2–4.4) and linearisation (§4.5), on BIGs.

`loopfuse(big, loc, pol, path)` splits the statement of the linear section at `path` after its `loc`-th
factor into a producer, `T(I_temp) += <producer factors>`, and a consumer that reads `T` in the
producer's place, where `I_temp` are the producer's indices that the consumer or the output still needs
(the formula of the worked example; Algorithm 1's line 10 has the sides swapped). The outermost loops of
the section that both sides use are fused: they enclose the `where`, and `T` keeps only the other
indices (a scalar when none are left). `pol=False` makes the factors after `loc` the producer. Loop
orders inside each side are the section's. `reorder(big, order, path)` permutes a linear section's own
loops.
"""

from __future__ import annotations

from typing import Mapping

from ..errors import ScheduleError
from ..format import Format
from .big import (Compute, Factor, Loop, Node, Where, computes, fresh_temporary, nest, replace_section,
                  respects_storage, section, storage_precedences, temporaries, unnest)


def loopfuse(big: Node, loc: int, pol: bool, path: tuple[int, ...]) -> Node:
    command = f"loopfuse({loc}, {pol}, {list(path)})"
    _, sec = section(big, path, command)
    loops, compute = unnest(sec)
    factors = compute.factors
    if not 1 <= loc < len(factors):
        raise ScheduleError(f"{command}: expected 1 <= loc < {len(factors)} (the factors of {compute}), but "
                            f"found {loc}")
    left, right = factors[:loc], factors[loc:]
    producer, consumer = (left, right) if pol else (right, left)
    name = fresh_temporary(f.tensor for c in computes(big) for f in (c.lhs, *c.factors))
    new = split(loops, compute.lhs, producer, consumer, pol, name, fuse=True)
    return replace_section(big, path, new)


def split(loops: tuple[str, ...], lhs: Factor, producer: tuple[Factor, ...], consumer: tuple[Factor, ...],
          pol: bool, name: str, fuse: bool) -> Node:
    """`loops: lhs += producer * consumer` as a `where` through temporary `name` (Algorithm 1), fused
    over the loops' longest common prefix when `fuse`, else over none."""
    made = {i for f in producer for i in f.indices}
    needed = {i for f in (lhs, *consumer) for i in f.indices}
    temp = [i for i in loops if i in made and i in needed]
    prd = [i for i in loops if i in made]
    con = [i for i in loops if i in needed]
    fused = []
    if fuse:
        for i in loops:
            if i not in prd or i not in con:
                break
            fused.append(i)
    t = Factor(name, tuple(i for i in temp if i not in fused))
    reads = (t, *consumer) if pol else (*consumer, t)
    return nest(fused, Where(t, nest([i for i in con if i not in fused], Compute(lhs, reads)),
                             nest([i for i in prd if i not in fused], Compute(t, producer))))


def reorder(big: Node, order: tuple[str, ...], path: tuple[int, ...], formats: Mapping[str, Format]) -> Node:
    command = f"reorder({list(order)}, path={list(path)})"
    bound, sec = section(big, path, command)
    loops, compute = unnest(sec)
    if sorted(order) != sorted(loops):
        raise ScheduleError(f"{command}: expected a permutation of the section's loops {list(loops)} "
                            f"(loops fused above it, {list(bound)}, stay), but found {list(order)}")
    broken = respects_storage(tuple(order), bound, (compute.lhs, *compute.factors), formats)
    if broken:
        raise ScheduleError(f"{command}: {broken}")
    return replace_section(big, path, nest(order, compute))


def linearise(big: Node, formats: Mapping[str, Format]) -> Node:
    """The linear iteration graph that computes what `big` does (Fig. 7): every temporary replaced by
    the producer it holds, every loop in one nest, in an order that respects each sparse factor's
    storage (the loops of `big` as met depth-first, consumer first, sorted stably by storage order)."""
    lhs, factors = _inlined(big)
    met = list(dict.fromkeys(_loops_met(big)))
    order = _storage_sorted(met, factors, formats)
    return nest(order, Compute(lhs, factors))


def _inlined(node: Node) -> tuple[Factor, tuple[Factor, ...]]:
    """The statement `node` computes, its temporaries replaced by their producers' factors."""
    temps = {t.tensor for t in temporaries(node)}
    statements = {c.lhs.tensor: c for c in computes(node) if c.lhs.tensor in temps}
    result = next(c for c in computes(node) if c.lhs.tensor not in temps)

    def expand(factor: Factor) -> tuple[Factor, ...]:
        if factor.tensor not in statements:
            return (factor,)
        return tuple(g for f in statements[factor.tensor].factors for g in expand(f))

    return result.lhs, tuple(g for f in result.factors for g in expand(f))


def _loops_met(node: Node):
    if isinstance(node, Loop):
        yield node.index
        yield from _loops_met(node.body)
    elif isinstance(node, Where):
        yield from _loops_met(node.consumer)
        yield from _loops_met(node.producer)


def _storage_sorted(met: list[str], factors, formats) -> tuple[str, ...]:
    before = storage_precedences(factors, formats, met)
    order: list[str] = []
    while len(order) < len(met):
        order.append(next(i for i in met if i not in order and before[i] <= set(order)))
    return tuple(order)
