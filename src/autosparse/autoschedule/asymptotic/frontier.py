"""The asymptotic frontier (Ahrens et al. §6.3): the costs no other cost is always better than.

Costs arrive one at a time. One that dominates (does asymptotically more work than) a member of the
frontier is dropped; otherwise it joins, and the members that dominate it leave. Equal costs all stay.
Each dropped cost remembers a witness: the cost that dominated it, followed to a final member (domination
is transitive, so the member it leads to dominates it too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable

from .cost import Cost


@dataclass(frozen=True)
class Tradeoff:
    """A program's asymptotic cost beside a constant-factor criterion, the hash-table levels it needs:
    the frontier over both keeps a program that an asymptotically cheaper one beats only by hashing."""

    cost: Cost
    hashed: int = 0

    def __le__(self, other: "Tradeoff") -> bool:
        return self.hashed <= other.hashed and self.cost <= other.cost

    def dominates(self, other: "Tradeoff") -> bool:
        """Worse on one criterion and no better on the other."""
        return other <= self and not self <= other


class Frontier:
    """Undominated costs by key, with a witness for every dominated key."""

    def __init__(self):
        self.members: dict[Hashable, Cost | Tradeoff] = {}
        self._beaten_by: dict[Hashable, Hashable] = {}
        self.comparisons = 0

    def offer(self, key: Hashable, cost: Cost | Tradeoff) -> bool:
        """Add `key` unless a member is always at most as costly and sometimes less; True if kept."""
        for member_key, member in self.members.items():
            self.comparisons += 1
            if cost.dominates(member):
                self._beaten_by[key] = member_key
                return False
        beaten = [k for k, member in self.members.items() if member.dominates(cost)]
        self.comparisons += len(self.members)
        for k in beaten:
            del self.members[k]
            self._beaten_by[k] = key
        self.members[key] = cost
        return True

    def extend(self, items: Iterable[tuple[Hashable, Cost | Tradeoff]]) -> "Frontier":
        for key, cost in items:
            self.offer(key, cost)
        return self

    def witness(self, key: Hashable) -> Hashable | None:
        """The final member that dominates `key` (None when `key` is a member)."""
        if key in self.members:
            return None
        while key not in self.members:
            key = self._beaten_by[key]
        return key

    @property
    def dominated(self) -> tuple[Hashable, ...]:
        return tuple(self._beaten_by)
