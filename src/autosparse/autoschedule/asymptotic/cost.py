"""Asymptotic costs: the union of a program's task sets, normalised, with sunk costs and assumptions.

Comparing raw task sets makes a schedule look better only because it does less when an input is all
zero (outer products over Gustavson, Ahrens et al. §6.2). So, unless asked otherwise, every cost is
compared as `P ∪ S` under assumptions `A`: `S` holds reading each sparse input (`{[i,j] | B(i,j)}`) and
iterating any single dimension (`{[i]}`), `A` says each sparse input has a nonzero (an atom over fresh
variables joined to every query). A cost is kept minimal — no query contained in another, no atom that
can be dropped — so equal costs usually print, hash and compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Mapping

from .analysis import tasks
from .query import Atom, Memo, Query, contained, disjuncts, folded, minimal
from .sketch import Stmt


@dataclass(frozen=True)
class Cost:
    """A union of conjunctive queries: the set of tasks a program runs, up to constant factors."""

    queries: tuple[Query, ...]

    @staticmethod
    def of(queries: Iterable[Query]) -> "Cost":
        """The minimal union of `queries` (memoised: programs that differ only where it does not matter
        produce the same raw queries)."""
        return _cost_memo.get_or(frozenset(queries), Cost._normalised)

    @staticmethod
    def _normalised(queries: frozenset[Query]) -> "Cost":
        kept: list[Query] = []
        for query in sorted({_minimal(q) for q in queries}, key=_size):
            if not any(contained(query, other) for other in kept):
                kept = [other for other in kept if not contained(other, query)]
                kept.append(query)
        return Cost(tuple(sorted(kept, key=lambda q: (q.dims, q.atoms))))

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        """Kept: a cost keys the frontier's and the search's dictionaries for every program."""
        return hash(self.queries)

    def __le__(self, other: "Cost") -> bool:
        """Contained on every input: each of our queries inside one of theirs."""
        return all(any(contained(p, q) for q in other.queries) for p in self.queries)

    def dominates(self, other: "Cost") -> bool:
        """Asymptotically more work: `other` is inside this cost and this cost is not inside `other`."""
        return other <= self and not self <= other

    def __str__(self) -> str:
        return " ∪ ".join(map(str, self.queries)) or "∅"


def _size(query: Query) -> tuple:
    return (-len(query.dims), len(query.atoms), query.dims, query.atoms)


_cost_memo = Memo(1 << 18)
_task_memo = Memo(1 << 18)  # one loop or statement's work recurs in thousands of programs of a kernel
_minimal_memo = Memo(1 << 18)
_program_memo = Memo(1 << 12)


def _task_queries(key: tuple) -> tuple[Query, ...]:
    """The conjunctive queries of the task `{[head…] | guard}` under assumptions `assumed`."""
    head, guard, assumed = key
    return tuple(Query.of(((i, i) for i in head), folded(head, conjunction | assumed))
                 for conjunction in disjuncts(guard))


def _minimal(query: Query) -> Query:
    return _minimal_memo.get_or(query, minimal)


@dataclass(frozen=True)
class CostModel:
    """How programs of one kernel are costed: its sparse inputs (name → the indices they are read at in
    the expression), its indices, and whether sunk costs and assumptions apply."""

    sparse: Mapping[str, tuple[str, ...]]
    indices: tuple[str, ...]
    sunk: bool = True
    scoped: bool = True

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((tuple(self.sparse.items()), self.indices, self.sunk, self.scoped))

    def cost(self, program: Stmt) -> Cost:
        return Cost.of(self._queries(self._tasks(program)) + self.sunk_costs)

    def cost_once(self, program: Stmt) -> Cost:
        """`cost`, for a program met once (the search's): its tasks are not kept, which saves hashing
        the whole program and keeps the programs `select` costs again in the memo."""
        return Cost.of(self._queries(self._interpreted(program)) + self.sunk_costs)

    def cost_touching(self, program: Stmt, tensors: frozenset[str]) -> Cost:
        """The part of `program`'s work that accesses `tensors` (no sunk costs): what a constant-factor
        estimate weighs apart, such as the accesses to hash tables."""
        return Cost.of(self._queries(t for t in self._tasks(program) if t.tensors & tensors))

    def tasks(self, program: Stmt) -> list:
        """`program`'s task sets, memoised with those `cost` analysed (select reads one program's parts)."""
        return self._tasks(program)

    def cost_of(self, found: Iterable[tuple[tuple[str, ...], object]]) -> Cost:
        """The cost of the task sets `found` ((head, guard) pairs), with no sunk costs, each pair's queries
        memoised with `cost`'s."""
        assumed = self.assumptions
        return Cost.of(query for head, guard in found
                       for query in _task_memo.get_or((head, guard, assumed), _task_queries))

    def _tasks(self, program: Stmt):
        return _program_memo.get_or((program, self), lambda key: self._interpreted(program))  # select costs one program's parts several times

    def _interpreted(self, program: Stmt):
        return tasks(program, self._orders, self.scoped)

    @cached_property
    def _orders(self) -> dict[str, int]:
        return {name: len(ix) for name, ix in self.sparse.items()}

    def _queries(self, found) -> list[Query]:
        assumed = self.assumptions
        return [query for task in found
                for query in _task_memo.get_or((task.head, task.guard, assumed), _task_queries)]

    @cached_property
    def sunk_costs(self) -> list[Query]:
        """Reading each sparse input and iterating each single dimension, which every program pays."""
        if not self.sunk:
            return []
        assumed = self.assumptions
        return [Query.of([(i, i)], assumed) for i in self.indices] + [
            Query.of(((i, i) for i in dict.fromkeys(ix)), {Atom(name, ix)} | assumed)
            for name, ix in self.sparse.items()]

    @cached_property
    def assumptions(self) -> frozenset[Atom]:
        """Every sparse input has a nonzero somewhere (as atoms over variables of their own)."""
        if not self.sunk:
            return frozenset()
        return frozenset(Atom(name, tuple(f"{i}'{name}" for i in ix)) for name, ix in self.sparse.items())
