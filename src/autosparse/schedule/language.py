"""Schedules as values: a sequence of scheduling commands, written as text or chained as methods.

    "reorder(i, k, j); precompute(A(i,k) * B(k,j), j, j); parallelize(i, cpu_thread, no_races)"
    Schedule().reorder("i", "k", "j").precompute("A(i,k) * B(k,j)", "j", "j")
    "loopfuse(2, true, []); reorder(m, k, n, j, path=[1]); loopfuse(2, true, [1])"   (SparseAuto's directives)

A schedule does not hold a statement: `apply` replays its commands on a kernel's default schedule
(before legalisation, which runs after the commands), so one schedule serves every format and dtype
specialisation of a kernel. Arguments are kept as index-notation nodes: index variables and names are
bare names, factors are numbers, `precompute`'s first argument is an expression, a path is a `Path`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cin.ast import Stmt
from ..cin.provenance import attach, split_relations
from ..errors import ParseError, ScheduleError
from ..notation import ast as notation
from ..notation.ast import IndexVar, Literal
from ..notation.parser import ExpressionParser, Token
from .commands import Command, Path, lookup


@dataclass(frozen=True)
class Schedule:
    commands: tuple[Command, ...] = ()

    def __str__(self) -> str:
        return "; ".join(map(str, self.commands))

    @staticmethod
    def parse(text: str) -> "Schedule":
        return Schedule(_CommandParser(text).commands())

    def _then(self, name: str, *args, path=None) -> "Schedule":
        parsed = tuple(_argument(a) for a in args)
        command = Command(name, parsed, None if path is None else _path(path))
        lookup(command, str(command), 0)
        return Schedule((*self.commands, command))

    def reorder(self, *indices, path=None) -> "Schedule":
        """The listed loops in this order; with `path`, the whole loop order of that section of a
        branched nest (the loops fused above it stay)."""
        return self._then("reorder", *indices, path=path)

    def loopfuse(self, loc: int, pol: bool, path=()) -> "Schedule":
        """Split the product of the section at `path` after its `loc`-th factor into a producer (the
        first factors when `pol`, else the rest) and a consumer, fusing the loops both use (SparseAuto)."""
        return self._then("loopfuse", loc, "true" if pol else "false", _path(path))

    def precompute(self, expr, index, workspace_index, fmt=None) -> "Schedule":
        return self._then("precompute", expr, index, workspace_index, *([fmt] if fmt is not None else []))

    def parallelize(self, index, unit="cpu_thread", race="no_races") -> "Schedule":
        return self._then("parallelize", index, unit, race)

    def unroll(self, index, factor: int) -> "Schedule":
        return self._then("unroll", index, factor)

    def split(self, index, outer, inner, factor: int) -> "Schedule":
        return self._then("split", index, outer, inner, factor)

    def divide(self, index, outer, inner, parts: int) -> "Schedule":
        return self._then("divide", index, outer, inner, parts)

    def collapse(self, outer, inner, fused) -> "Schedule":
        return self._then("collapse", outer, inner, fused)

    def pos(self, index, position, access) -> "Schedule":
        return self._then("pos", index, position, access)

    def coord(self, position, index) -> "Schedule":
        return self._then("coord", position, index)

    def bound(self, index, bounded, size: int, kind="max_exact") -> "Schedule":
        return self._then("bound", index, bounded, size, kind)

    def coiterate(self, index, strategy="auto", tensor=None) -> "Schedule":
        return self._then("coiterate", index, strategy, *([tensor] if tensor is not None else []))

    def apply(self, stmt: Stmt) -> Stmt:
        """The commands replayed on `stmt`; a SuchThat holding the relations when a command derived
        index variables."""
        stmt, relations = split_relations(stmt)
        last = None
        for command in self.commands:
            if last is not None:
                raise ScheduleError(f"{command}: no command may follow {last} (Senanayake et al. §4)")
            step = lookup(command, str(command), 0).read(command)
            stmt, relations = step.apply(stmt, relations)
            if step.ends_schedule:
                last = command
        return attach(stmt, relations)


def _path(value) -> Path:
    if isinstance(value, Path):
        return value
    steps = tuple(value)
    if any(not isinstance(s, int) or isinstance(s, bool) or s not in (0, 1) for s in steps):
        raise ScheduleError(f"Expected a path of 0s (producer) and 1s (consumer), but found {list(steps)}")
    return Path(steps)


def _argument(value):
    """A method argument as a notation node: text is parsed as an expression, numbers become literals."""
    if isinstance(value, Path):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Literal(value)
    if isinstance(value, IndexVar):
        return notation.Access(value.name, ())
    if isinstance(value, str):
        return ExpressionParser(value).expression()
    raise ScheduleError(f"Expected an index name, a number or an expression as a command argument, but found "
                        f"{type(value).__name__}")


class _CommandParser(ExpressionParser):
    def literal(self, token: Token) -> Literal:
        """Integers as written (a split of 2**70 is refused by range, not rounded to a double first)."""
        if not token.is_integer:
            return super().literal(token)
        digits = token.text.lstrip("0") or "0"
        if len(digits) > 100:
            raise ParseError(f"Expected a schedule integer within int64, but found one of {len(digits)} digits",
                             self.text, token.column)
        return Literal(int(digits))

    def commands(self) -> tuple[Command, ...]:
        out = []
        while True:
            name = self.take("name")
            self.take("(")
            args, path = [], None
            while self.peek().text != ")":
                if args or path:
                    self.take(",")
                if path is not None:
                    self.take(")")
                if self.peek().text == "path" and self.peek(1).text == "=":
                    self.take()
                    self.take("=")
                    path = self.path()
                elif self.peek().text == "[":
                    args.append(self.path())
                else:
                    args.append(self.expr())
            self.take(")")
            command = Command(name.text, tuple(args), path)
            lookup(command, self.text, name.column - 1)
            out.append(command)
            if self.peek().text != ";":
                break
            self.take(";")
            if self.peek().kind == "end":
                break
        self.take("end")
        return tuple(out)

    def path(self) -> Path:
        self.take("[")
        steps = []
        while self.peek().text != "]":
            if steps:
                self.take(",")
            token = self.take("number")
            if token.text not in ("0", "1"):
                raise ParseError(f"Expected 0 (producer) or 1 (consumer) in a path, but found {token.text}",
                                 self.text, token.column)
            steps.append(int(token.text))
        self.take("]")
        return Path(tuple(steps))
