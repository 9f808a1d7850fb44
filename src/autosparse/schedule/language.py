"""Schedules as values: a sequence of scheduling commands, written as text or chained as methods.

    "reorder(i, k, j); precompute(A(i,k) * B(k,j), j, j); parallelize(i, cpu_thread, no_races)"
    Schedule().reorder("i", "k", "j").precompute("A(i,k) * B(k,j)", "j", "j")

A schedule does not hold a statement: `apply` replays its commands on a kernel's default schedule
(before legalisation, which runs after the commands), so one schedule serves every format and dtype
specialisation of a kernel. Arguments are kept as index-notation nodes: index variables and names are
bare names, factors are numbers, `precompute`'s first argument is an expression.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cin.ast import ParallelUnit, Race, Stmt
from ..cin.provenance import BoundKind, Provenance, attach, split_relations
from ..errors import ParseError, ScheduleError
from ..notation import ast as notation
from ..notation.ast import IndexVar, Literal
from ..notation.parser import _Parser
from . import commands, derive

#: Commands of the contract that later steps of the scheduling work add.
NOT_YET = {"coiterate", "loopfuse"}
ARITY = {"reorder": (2, None), "precompute": (3, 4), "parallelize": (3, 3), "unroll": (2, 2), "split": (4, 4),
         "divide": (4, 4), "collapse": (3, 3), "pos": (3, 3), "coord": (2, 2), "bound": (4, 4)}


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple  # notation nodes: Access (a bare name is an access without indices), Literal, expressions

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Schedule:
    commands: tuple[Command, ...] = ()

    def __str__(self) -> str:
        return "; ".join(map(str, self.commands))

    @staticmethod
    def parse(text: str) -> "Schedule":
        return Schedule(_CommandParser(text).commands())

    def _then(self, name: str, *args) -> "Schedule":
        parsed = tuple(_argument(a) for a in args)
        command = Command(name, parsed)
        _check_arity(command, str(command), 0)
        return Schedule((*self.commands, command))

    def reorder(self, *indices) -> "Schedule":
        return self._then("reorder", *indices)

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

    def apply(self, stmt: Stmt) -> Stmt:
        """The commands replayed on `stmt`; a SuchThat holding the relations when a command derived
        index variables."""
        stmt, relations = split_relations(stmt)
        parallel = None
        for command in self.commands:
            if parallel is not None:
                raise ScheduleError(f"{command}: no command may follow {parallel} (Senanayake et al. §4)")
            stmt, relations = _run(command, stmt, relations)
            if command.name == "parallelize":
                parallel = command
        return attach(stmt, relations)


def _argument(value):
    """A method argument as a notation node: text is parsed as an expression, numbers become literals."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Literal(value)
    if isinstance(value, IndexVar):
        return notation.Access(value.name, ())
    if isinstance(value, str):
        parser = _Parser(value)
        node = parser.expr()
        parser.take("end")
        return node
    raise ScheduleError(f"Expected an index name, a number or an expression as a command argument, but found "
                        f"{type(value).__name__}")


def _check_arity(command: Command, text: str, column: int) -> None:
    if command.name in NOT_YET:
        raise ScheduleError(f"{command.name}: this scheduling command is not supported yet")
    if command.name not in ARITY:
        known = ", ".join(sorted({*ARITY, *NOT_YET}))
        raise ParseError(f"Expected a scheduling command ({known}), but found {command.name!r}", text, column + 1)
    low, high = ARITY[command.name]
    if len(command.args) < low or high is not None and len(command.args) > high:
        wanted = f"{low}" if low == high else f"{low} or more" if high is None else f"{low} to {high}"
        raise ParseError(f"Expected {wanted} arguments to {command.name}, but found {len(command.args)}", text,
                         column + 1)


class _CommandParser(_Parser):
    def commands(self) -> tuple[Command, ...]:
        out = []
        while True:
            name = self.take("name")
            self.take("(")
            args = []
            while self.peek().text != ")":
                if args:
                    self.take(",")
                args.append(self.expr())
            self.take(")")
            command = Command(name.text, tuple(args))
            _check_arity(command, self.text, name.column - 1)
            out.append(command)
            if self.peek().text != ";":
                break
            self.take(";")
            if self.peek().kind == "end":
                break
        self.take("end")
        return tuple(out)


def _name(node, command: Command) -> str:
    if isinstance(node, notation.Access) and not node.indices:
        return node.tensor
    raise ScheduleError(f"{command}: expected a name, but found {node}")


def _index(node, command: Command) -> IndexVar:
    return IndexVar(_name(node, command))


def _choice(kind, node, command: Command):
    text = _name(node, command)
    try:
        return kind(text)
    except ValueError:
        spellings = ", ".join(member.value for member in kind)
        raise ScheduleError(f"{command}: expected one of {spellings}, but found {text!r}") from None


def _integer(node, command: Command) -> int:
    if not isinstance(node, Literal) or not isinstance(node.value, int):
        raise ScheduleError(f"{command}: expected a positive integer, not {node}")
    return node.value


def _run(command: Command, stmt: Stmt, relations: tuple) -> tuple[Stmt, tuple]:
    args, name = command.args, command.name
    if name == "reorder":
        return commands.reorder(stmt, tuple(_index(a, command) for a in args)), relations
    if name == "precompute":
        fmt = _name(args[3], command) if len(args) > 3 else None
        return commands.precompute(stmt, args[0], _index(args[1], command), _index(args[2], command), fmt,
                                   Provenance(relations)), relations
    if name == "parallelize":
        return commands.parallelize(stmt, _index(args[0], command), _choice(ParallelUnit, args[1], command),
                                    _choice(Race, args[2], command), Provenance(relations)), relations
    if name == "unroll":
        return commands.unroll(stmt, _index(args[0], command), _integer(args[1], command)), relations
    if name in ("split", "divide"):
        return derive.split(stmt, relations, *(_index(a, command) for a in args[:3]), _integer(args[3], command),
                            divide=name == "divide")
    if name == "collapse":
        return derive.collapse(stmt, relations, *(_index(a, command) for a in args))
    if name == "pos":
        return derive.pos(stmt, relations, _index(args[0], command), _index(args[1], command), args[2])
    if name == "coord":
        return derive.coord(stmt, relations, _index(args[0], command), _index(args[1], command))
    return derive.bound(stmt, relations, _index(args[0], command), _index(args[1], command),
                        _integer(args[2], command), _choice(BoundKind, args[3], command))
