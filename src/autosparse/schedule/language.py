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
from ..errors import ParseError, ScheduleError
from ..notation import ast as notation
from ..notation.ast import IndexVar, Literal
from ..notation.parser import _Parser
from . import commands

#: Commands of the contract that later steps of the scheduling work add.
NOT_YET = {"split", "divide", "pos", "coord", "collapse", "bound", "coiterate", "loopfuse"}
ARITY = {"reorder": (2, None), "precompute": (3, 4), "parallelize": (3, 3), "unroll": (2, 2)}


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

    def apply(self, stmt: Stmt) -> Stmt:
        parallel = None
        for command in self.commands:
            if parallel is not None:
                raise ScheduleError(f"{command}: no command may follow {parallel} (Senanayake et al. §4)")
            stmt = _run(command, stmt)
            if command.name == "parallelize":
                parallel = command
        return stmt


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


def _run(command: Command, stmt: Stmt) -> Stmt:
    args = command.args
    if command.name == "reorder":
        return commands.reorder(stmt, tuple(_index(a, command) for a in args))
    if command.name == "precompute":
        fmt = _name(args[3], command) if len(args) > 3 else None
        return commands.precompute(stmt, args[0], _index(args[1], command), _index(args[2], command), fmt)
    if command.name == "parallelize":
        return commands.parallelize(stmt, _index(args[0], command), _choice(ParallelUnit, args[1], command),
                                    _choice(Race, args[2], command))
    factor = args[1]
    if not isinstance(factor, Literal) or not isinstance(factor.value, int):
        raise ScheduleError(f"{command}: the factor must be a positive integer, not {factor}")
    return commands.unroll(stmt, _index(args[0], command), factor.value)
