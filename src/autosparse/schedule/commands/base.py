"""What every scheduling command shares: its written form (`Command`: a name and index-notation
arguments), the registry from names to command classes, and the readers that turn written arguments
into typed ones.

A scheduling command is one class, registered by `@command`: a frozen dataclass of typed arguments that
reads them from the written form (`read`), prints itself as users write it, and applies itself to a CIN
statement, checking its preconditions first (`apply`). The parser accepts, and `Schedule.apply` runs,
exactly the registered names (see `parallel.py`'s `Unroll` for the smallest one).
"""

from __future__ import annotations

import abc
import enum
import types
import typing
from dataclasses import dataclass, fields
from typing import ClassVar

from ...cin.ast import Stmt
from ...cin.provenance import Relation
from ...errors import ParseError, ScheduleError
from ...notation import ast as notation
from ...notation.ast import IndexVar, Literal

Relations = tuple[Relation, ...]
Derived = tuple[Stmt, Relations]


@dataclass(frozen=True)
class Path:
    """A section of a branched loop nest: from the root, 0 enters a `where`'s producer, 1 its consumer."""

    steps: tuple[int, ...]

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.steps))}]"


@dataclass(frozen=True)
class Command:
    """A command as written, before its arguments are read: what a schedule holds, so that one schedule
    replays on every specialisation of a kernel."""

    name: str
    args: tuple  # notation nodes: Access (a bare name is an access without indices), Literal, expressions
    path: Path | None = None  # reorder's section of a branched nest

    def __str__(self) -> str:
        path = [f"path={self.path}"] if self.path is not None else []
        return f"{self.name}({', '.join([*map(_text, self.args), *path])})"


def _text(arg) -> str:
    """An argument as written: a bare name without the `()` of the scalar access it parses to."""
    return arg.tensor if isinstance(arg, notation.Access) and not arg.indices else str(arg)


@dataclass(frozen=True)
class Arity:
    """How many arguments a command takes: from `least` to `most` (no limit when None)."""

    least: int
    most: int | None

    def admits(self, count: int) -> bool:
        return self.least <= count and (self.most is None or count <= self.most)

    def __str__(self) -> str:
        if self.least == self.most:
            return f"{self.least}"
        return f"{self.least} or more" if self.most is None else f"{self.least} to {self.most}"


class ScheduleCommand(abc.ABC):
    """One scheduling command with its arguments read. `apply` checks the command's preconditions on
    the statement (a `ScheduleError` naming the command, the index variable and the rule it breaks) and
    returns the rewritten statement with the relations of the index variables derived so far.

    Its first `arity.most` fields are its written arguments, in order: by default each is read by its
    annotation (an index variable, an integer, an enum's spelling, a tensor's name, an expression as
    written) and printed back the same way, so most commands write neither `read` nor `__str__`."""

    name: ClassVar[str]
    arity: ClassVar[Arity]
    ends_schedule: ClassVar[bool] = False  # no command may follow it (parallelize, Senanayake et al. §4)

    @classmethod
    def read(cls, written: Command) -> "ScheduleCommand":
        hints = typing.get_type_hints(cls)
        return cls(*(_reader(hints[f.name])(arg, written) for f, arg in zip(_written_fields(cls), written.args)))

    def __str__(self) -> str:
        values = (getattr(self, f.name) for f in _written_fields(type(self)))
        return f"{self.name}({', '.join(_spelling(v) for v in values if v is not None)})"

    @abc.abstractmethod
    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        """The statement with the command applied, and the relations with any it derives."""


COMMANDS: dict[str, type[ScheduleCommand]] = {}


def command(cls: type[ScheduleCommand]) -> type[ScheduleCommand]:
    """Register `cls` under its name: the one step that makes a command part of the language."""
    if cls.name in COMMANDS:
        raise TypeError(f"Expected one scheduling command named {cls.name}, but found {COMMANDS[cls.name]} and {cls}")
    COMMANDS[cls.name] = cls
    return cls


def lookup(written: Command, text: str, column: int) -> type[ScheduleCommand]:
    """The class of the command `written` (at `column` of `text`), given a fitting number of arguments."""
    found = COMMANDS.get(written.name)
    if found is None:
        known = ", ".join(sorted(COMMANDS))
        raise ParseError(f"Expected a scheduling command ({known}), but found {written.name!r}", text, column + 1)
    if not found.arity.admits(len(written.args)):
        raise ParseError(f"Expected {found.arity} arguments to {written.name}, but found {len(written.args)}", text,
                         column + 1)
    return found


def read_name(node, written: Command) -> str:
    if isinstance(node, notation.Access) and not node.indices:
        return node.tensor
    raise ScheduleError(f"{written}: expected a name, but found {node}")


def read_tensor_name(node, written: Command) -> str:
    """A tensor named bare (`B`) or by an access (`B(i,j)`)."""
    return node.tensor if isinstance(node, notation.Access) else read_name(node, written)


def read_index(node, written: Command) -> IndexVar:
    return IndexVar(read_name(node, written))


def read_choice(kind: type[enum.Enum], node, written: Command):
    """The member of `kind` that the argument spells."""
    text = read_name(node, written)
    try:
        return kind(text)
    except ValueError:
        spellings = ", ".join(member.value for member in kind)
        raise ScheduleError(f"{written}: expected one of {spellings}, but found {text!r}") from None


def read_integer(node, written: Command) -> int:
    if not isinstance(node, Literal) or not isinstance(node.value, int):
        raise ScheduleError(f"{written}: expected a positive integer, not {node}")
    return node.value


def _written_fields(cls) -> tuple:
    return fields(cls)[:cls.arity.most]


def _reader(annotation):
    """How an argument annotated `annotation` is read (`X | None` as X: an optional argument)."""
    if isinstance(annotation, types.UnionType):
        annotation, = (a for a in typing.get_args(annotation) if a is not type(None))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return lambda node, written: read_choice(annotation, node, written)
    return {IndexVar: read_index, int: read_integer, str: read_tensor_name}.get(annotation, lambda node, _: node)


def _spelling(value) -> str:
    return value.value if isinstance(value, enum.Enum) else str(value)
