"""Branched iteration graphs (Dias et al. §4): loop nests whose statements may split into a producer
that fills a dense temporary and a consumer that reads it, recursively.

A `Compute` is one statement `lhs += f1 * … * fn`; a `Loop` visits one index; a `Where` runs its
producer into `temporary` (zeroed each time the `Where` runs) and then its consumer. A *linear section*
is a chain of loops ending in a `Compute`; a path of 0s (producer) and 1s (consumer) names one from the
root, passing any loops on the way: `()` is the root, `(1,)` the first split's consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Union

from ..errors import ScheduleError
from ..format import Format


@dataclass(frozen=True, order=True)
class Factor:
    """A tensor read or written at `indices`; a temporary of no indices is a scalar."""

    tensor: str
    indices: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.tensor}({','.join(self.indices)})"


@dataclass(frozen=True)
class Compute:
    lhs: Factor
    factors: tuple[Factor, ...]

    @property
    def indices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i for f in (self.lhs, *self.factors) for i in f.indices))

    def __str__(self) -> str:
        return f"{self.lhs} += {' * '.join(map(str, self.factors))}"


@dataclass(frozen=True)
class Loop:
    index: str
    body: "Node"


@dataclass(frozen=True)
class Where:
    temporary: Factor
    consumer: "Node"
    producer: "Node"


Node = Union[Compute, Loop, Where]


def nest(indices, body: Node) -> Node:
    for index in reversed(tuple(indices)):
        body = Loop(index, body)
    return body


def unnest(node: Node) -> tuple[tuple[str, ...], Node]:
    """The loops at the top of `node`, outermost first, and what they enclose."""
    loops = []
    while isinstance(node, Loop):
        loops.append(node.index)
        node = node.body
    return tuple(loops), node


def show(node: Node) -> str:
    """The paper's compact notation: `i,j⟨t; k: t += …, l: A += …⟩` (temporary; producer, consumer)."""
    loops, inner = unnest(node)
    head = ",".join(loops)
    if isinstance(inner, Compute):
        body = str(inner)
        return f"{head}: {body}" if head else body
    body = f"⟨{inner.temporary}; {show(inner.producer)}, {show(inner.consumer)}⟩"
    return f"{head}{body}"


def computes(node: Node) -> Iterator[Compute]:
    if isinstance(node, Compute):
        yield node
    elif isinstance(node, Loop):
        yield from computes(node.body)
    else:
        yield from computes(node.producer)
        yield from computes(node.consumer)


def temporaries(node: Node) -> Iterator[Factor]:
    if isinstance(node, Loop):
        yield from temporaries(node.body)
    elif isinstance(node, Where):
        yield node.temporary
        yield from temporaries(node.producer)
        yield from temporaries(node.consumer)


def section(node: Node, path: tuple[int, ...], command: str) -> tuple[tuple[str, ...], Node]:
    """The linear section at `path`, and the loops around it (bound there)."""
    bound: list[str] = []
    for step in (*path, None):
        loops, inner = unnest(node)
        if step is None:
            if not isinstance(inner, Compute):
                raise ScheduleError(f"{command}: expected path {list(path)} to name a linear section, but it "
                                    f"names a split one ({show(node)}); extend the path with 0 (producer) or 1 "
                                    f"(consumer)")
            return tuple(bound), node
        if not isinstance(inner, Where):
            raise ScheduleError(f"{command}: expected a split at step {step} of path {list(path)}, but "
                                f"{show(node)} is linear")
        if step not in (0, 1):
            raise ScheduleError(f"{command}: expected path steps 0 (producer) or 1 (consumer), but found {step}")
        bound += loops
        node = inner.producer if step == 0 else inner.consumer
    raise AssertionError("unreachable")


def replace_section(node: Node, path: tuple[int, ...], new: Node) -> Node:
    if not path:
        return new
    loops, inner = unnest(node)
    assert isinstance(inner, Where)
    if path[0] == 0:
        inner = Where(inner.temporary, inner.consumer, replace_section(inner.producer, path[1:], new))
    else:
        inner = Where(inner.temporary, replace_section(inner.consumer, path[1:], new), inner.producer)
    return nest(loops, inner)


def level_order(fmt: Format, factor: Factor) -> tuple[str, ...]:
    """The factor's indices in its format's storage order."""
    return tuple(factor.indices[m] for m in fmt.mode_order)


def sparse_levels(formats: Mapping[str, Format], factor: Factor) -> tuple[str, ...]:
    """The indices a sparse factor must be iterated in, outermost first: its storage order up to its
    last compressed level (below that, every level is dense and may be visited in any order); nothing
    for a dense tensor or a temporary."""
    fmt = formats.get(factor.tensor)
    if fmt is None or fmt.is_dense:
        return ()
    last = max(d for d, level in enumerate(fmt.levels) if not level.properties.full)
    return level_order(fmt, factor)[:last + 1]


def storage_precedences(factors, formats: Mapping[str, Format], indices) -> dict[str, set[str]]:
    """For each of `indices`, the indices whose loops must enclose its loop: those of the levels above
    it in each sparse factor."""
    before: dict[str, set[str]] = {i: set() for i in indices}
    for factor in factors:
        levels = sparse_levels(formats, factor)
        for n, inner in enumerate(levels):
            if inner in before:
                before[inner] |= set(levels[:n])
    return before


def fresh_temporary(names) -> str:
    """The first of t0, t1, … not among `names`."""
    taken = set(names)
    return next(name for name in (f"t{n}" for n in range(len(taken) + 1)) if name not in taken)


def respects_storage(order: tuple[str, ...], bound: tuple[str, ...], factors, formats) -> str | None:
    """Why visiting `order` below loops `bound` breaks a sparse factor's storage order (None if it
    doesn't): a level's loop must sit inside those of the levels above it."""
    position = {i: n for n, i in enumerate((*bound, *order))}
    for factor in factors:
        levels = sparse_levels(formats, factor)
        for outer, inner in zip(levels, levels[1:]):
            if position[outer] > position[inner]:
                return f"{factor} is stored {','.join(levels)}, so loop {outer} must enclose loop {inner}"
    return None


def cin_text(node: Node, formats: Mapping[str, Format]) -> str:
    """`node` in concrete index notation's text form. Temporaries written in a `where` producer are
    dense there (a temporary of no indices a scalar); they and dense tensors are located at every
    index, so any loop order may visit them, while sparse tensors are stepped through in storage order."""
    if isinstance(node, Loop):
        return f"∀{node.index} {cin_text(node.body, formats)}"
    if isinstance(node, Where):
        return f"where({cin_text(node.consumer, formats)}, {cin_text(node.producer, formats)})"

    def access(factor: Factor) -> str:
        fmt = formats.get(factor.tensor)
        if fmt is not None and not fmt.is_dense:
            return str(factor)
        return f"{factor.tensor}({','.join(f'{i}@locate' for i in factor.indices)})"

    return f"{access(node.lhs)} += {' * '.join(map(access, node.factors))}"
