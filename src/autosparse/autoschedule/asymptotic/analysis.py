"""The abstract interpreter of Ahrens et al. Fig. 5: a sketch's work as task sets.

Walking the program with the indices bound so far and a guard (the predicate under which the current
code runs), each loop adds one task set per access it steps through (`{[bound…, i] | guard ∧ ∃… A}`),
or, stepping through none, the whole dimension (`{[bound…, i] | guard}`),
then follows every zero/nonzero case of those accesses with zeros substituted and annihilated; each
assignment adds `{[bound…] | guard}` and records that it may have written where the guard holds.
A tensor's nonzeros are tracked as a predicate over its modes (`state`): sparse inputs start as
themselves, dense inputs are never zero (untracked), and a `where` starts its temporary at zero.
"Zero" is the semiring's (autoschedule/algebra.py): ⊕'s identity, which a temporary starts at and ⊗
annihilates (+inf under min-plus); a sparse input of another fill is costed as a dense one (the
search leaves it out of `sparse`).

A temporary is recomputed for every iteration of the loops around its `where`, so with `scoped` (the
default) its state keeps those loops' indices free: in `∀i (… w(l) …) where (∀k ∀l w(l) += B(i,k)·C(k,l))`
the consumer sees `w(l)` nonzero where `∃k B(i,k) ∧ C(k,l)` for the current `i`. The paper's Fig. 5
quantifies every index but the modes away (`∃i,k B(i,k) ∧ C(k,l)`: nonzero for some row), which makes
such row-at-a-time schedules look as costly as the union over all rows; `scoped=False` reproduces that.

The interpretation of a loop or where depends only on the node, the bound indices, the guard, the states
of the tensors it reads and the scopes of those it writes, so its effect (tasks added, nonzeros written,
scopes opened) is memoised under that context and replayed where it recurs across a search's programs.
Guards are written without the nonzero reads they imply (`narrowed`): stepping through `B` on `i` and
then on `k` gives the same guard as locating on `i`, so the loops below are interpreted once for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Mapping

from ...cin.ast import Assign, Forall, Protocol, Where
from ...cin.rewrite import is_zero, without
from ...notation.ast import walk
from .query import FALSE, TRUE, Atom, Memo, Pred, disj, exists, narrowed, rename
from .sketch import Access, Stmt, reads


@dataclass(frozen=True, slots=True)
class Task:
    """`{[head…] | guard}`: the index tuples at which one statement or loop does constant work, and the
    tensors that work touches (a loop: the one it steps through; an assignment: all it accesses)."""

    head: tuple[str, ...]
    guard: Pred
    tensors: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return f"{{[{','.join(self.head)}]" + ("}" if self.guard == TRUE else f" | {self.guard}}}")


def tasks(program: Stmt, sparse: Mapping[str, int], scoped: bool = True) -> list[Task]:
    """The task sets of `program`, whose sparse inputs (name → order) are `sparse`."""
    interpreter = _Interpreter({name: Atom(name, _modes(order)) for name, order in sparse.items()}, scoped,
                               not any(map(is_zero, walk(program))))
    interpreter.interpret(program, (), TRUE)  # a whole program recurs only where the search memoises it
    return interpreter.tasks


def _modes(order: int) -> tuple[str, ...]:
    return tuple(f"#{m}" for m in range(order))


def _nonzero(key: tuple) -> Pred:
    """A tensor's nonzero pattern read at `indices`, those `free` quantified away. Memoised: the same
    read under the same loops recurs in most programs of a search, and renaming took a third of it."""
    pattern, indices, free = key
    return exists(free, rename(pattern, dict(zip(_modes(len(indices)), indices))))


_nonzero_memo = Memo(1 << 18)


def _written(key: tuple) -> Pred:
    """Where an assignment under `guard` writes its tensor (at `indices`), the loops `dropped` outside
    both its indices and its scope quantified away. Memoised: the same assignment under the same guard
    recurs across a loop nest's protocol choices, and renaming the guard was a tenth of a search."""
    guard, indices, dropped = key
    return exists(dropped, rename(guard, dict(zip(indices, _modes(len(indices))))))


_written_memo = Memo(1 << 16)


@dataclass(frozen=True, slots=True)
class _Effect:
    tasks: tuple[Task, ...]
    state: tuple[tuple[str, Pred | None], ...]
    enclosing: tuple[tuple[str, tuple[str, ...] | None], ...]


def _touched(node: Stmt) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tensors `node` reads, and those it writes, each once in program order."""
    read: dict[str, None] = {}
    written: dict[str, None] = {}
    _collect_touched(node, read, written)
    return tuple(read), tuple(written)


def _collect_touched(node: Stmt, read: dict[str, None], written: dict[str, None]) -> None:
    if isinstance(node, Assign):
        written[node.lhs.tensor] = None
        read.update(dict.fromkeys(a.tensor for a in reads(node.rhs)))
    else:
        for child in node.children():
            _collect_touched(child, read, written)


@dataclass(frozen=True, slots=True)
class _Place:
    """A loop or where under given bound indices and guard: the tensors it reads and writes (in a fixed
    order), and its effect per context (the states of what it reads, the scopes of what it writes)."""

    read: tuple[str, ...]
    written: tuple[str, ...]
    effects: dict = field(default_factory=dict)


# A loop or where interpreted under the same bound indices, guard and states of what it reads recurs in
# most programs of a search (the programs of a loop nest differ in a few reads' protocols each), so its
# effect is computed once and replayed.
_place_memo = Memo(1 << 16)


class _Interpreter:
    def __init__(self, state: dict[str, Pred], scoped: bool, zero_free: bool):
        self.state, self.scoped = state, scoped
        self.zero_free = zero_free  # no literal zero: a loop's body with no read zero is itself
        self.enclosing: dict[str, tuple[str, ...]] = {}  # a temporary → the loops around its where
        self.tasks: list[Task] = []

    def nonzero(self, access: Access, bound: tuple[str, ...]) -> Pred:
        """Where `access` may be nonzero, its indices not yet bound quantified away."""
        pattern = self.state.get(access.tensor, TRUE)
        free = tuple(i for i in dict.fromkeys(access.indices) if i not in bound)
        return _nonzero_memo.get_or((pattern, access.indices, free), _nonzero)

    def statement(self, node: Stmt, bound: tuple[str, ...], guard: Pred) -> None:
        """Interpret `node`, replaying the effect of an equal loop or where met before in the same
        context (bound indices, guard, the states of what it reads, the scopes of what it writes)."""
        if isinstance(node, Assign):
            self.interpret(node, bound, guard)
            return
        place = _place_memo.get_or((node, bound, guard, self.scoped), lambda _: _Place(*_touched(node)))
        context = (tuple(self.state.get(t) for t in place.read), tuple(self.enclosing.get(t) for t in place.written))
        effect = place.effects.get(context)
        if effect is None:
            effect = place.effects[context] = self.effect(node, bound, guard, place.read, place.written)
        self.replay(effect, place.read)

    def effect(self, node: Stmt, bound: tuple[str, ...], guard: Pred, read: tuple[str, ...],
               written: tuple[str, ...]) -> _Effect:
        """What interpreting `node` adds: its tasks, the nonzeros it writes (for a tensor it does not
        read, only what it adds, so that the effect holds whatever was written before) and the scopes its
        wheres open. The interpreter is left as it was."""
        state = {t: self.state.pop(t) for t in written if t in self.state}
        self.state.update((t, state[t]) for t in written if t in read and t in state)
        enclosing = {t: self.enclosing[t] for t in written if t in self.enclosing}
        start = len(self.tasks)
        self.interpret(node, bound, guard)
        effect = _Effect(tuple(self.tasks[start:]), tuple((t, self.state.get(t)) for t in written),
                         tuple((t, self.enclosing.get(t)) for t in written))
        del self.tasks[start:]
        for t in written:
            self.state.pop(t, None)
            self.enclosing.pop(t, None)
        self.state.update(state)
        self.enclosing.update(enclosing)
        return effect

    def replay(self, effect: _Effect, read: tuple[str, ...]) -> None:
        """Apply `effect`: a written tensor that `node` also read takes its state after, any other adds
        it to what it held (∨ flattens, so this equals writing in place)."""
        self.tasks.extend(effect.tasks)
        for t, pred in effect.state:
            if pred is not None:
                self.state[t] = pred if t in read else disj(self.state.get(t, FALSE), pred)
        for t, scope in effect.enclosing:
            if scope is not None:
                self.enclosing[t] = scope

    def interpret(self, node: Stmt, bound: tuple[str, ...], guard: Pred) -> None:
        if isinstance(node, Assign):
            self.tasks.append(Task(bound, guard, frozenset({node.lhs.tensor, *(a.tensor for a in reads(node.rhs))})))
            lhs = node.lhs
            kept = set(lhs.indices) | set(self.enclosing.get(lhs.tensor, ()))
            written = _written_memo.get_or((guard, lhs.indices, tuple(b for b in bound if b not in kept)), _written)
            self.state[lhs.tensor] = disj(self.state.get(lhs.tensor, FALSE), written)
        elif isinstance(node, Where):
            for temporary in _touched(node.producer)[1]:
                self.state[temporary] = FALSE
                if self.scoped:
                    self.enclosing[temporary] = bound
            self.statement(node.producer, bound, guard)
            self.statement(node.consumer, bound, guard)
        else:
            self.loop(node, bound, guard)

    def loop(self, node: Forall, bound: tuple[str, ...], guard: Pred) -> None:
        inner = (*bound, node.index)
        steppers = list(dict.fromkeys(a for a in reads(node.body) if a.protocol_of(node.index) == Protocol.STEP))
        for access in steppers:
            self.tasks.append(Task(inner, narrowed(guard, self.nonzero(access, inner)), frozenset({access.tensor})))
        if not steppers:
            # A loop that steps through nothing visits its whole dimension (not in the paper's Fig. 5,
            # but without it a dense loop inside a sparse one would be free).
            self.tasks.append(Task(inner, guard))
            self.statement(node.body, inner, guard)
            return
        vanishing: set[Access] = set()  # steppers whose zero alone leaves nothing (a factor of every term)
        for zero in product((False, True), repeat=len(steppers)):  # every zero set after its subsets
            zeros = frozenset(a for a, z in zip(steppers, zero) if z)
            if zeros & vanishing:
                continue  # `without` is monotone: more zeros leave no more
            body = node.body if not zeros and self.zero_free else without(node.body, zeros)
            if body is None:
                if len(zeros) == 1:
                    vanishing |= zeros
                continue
            present = set(reads(body)) if zeros or not self.zero_free else steppers
            case = narrowed(guard, *(self.nonzero(a, inner) for a in steppers if a not in zeros and a in present))
            self.statement(body, inner, case)
