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

from ..cin.ast import ParallelUnit, Race, Stmt, Strategy
from ..cin.provenance import BoundKind, Provenance, attach, split_relations
from ..errors import ParseError, ScheduleError
from ..notation import ast as notation
from ..notation.ast import IndexVar, Literal
from ..notation.parser import _is_integer, _Parser
from . import branched, commands, derive

ARITY = {"coiterate": (2, 3), "reorder": (2, None), "precompute": (3, 4), "parallelize": (3, 3), "unroll": (2, 2), "split": (4, 4),
         "divide": (4, 4), "collapse": (3, 3), "pos": (3, 3), "coord": (2, 2), "bound": (4, 4),
         "loopfuse": (3, 3)}


@dataclass(frozen=True)
class Path:
    """A section of a branched loop nest: from the root, 0 enters a `where`'s producer, 1 its consumer."""

    steps: tuple[int, ...]

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.steps))}]"


@dataclass(frozen=True)
class Command:
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
        _check_arity(command, str(command), 0)
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
        parallel = None
        for command in self.commands:
            if parallel is not None:
                raise ScheduleError(f"{command}: no command may follow {parallel} (Senanayake et al. §4)")
            stmt, relations = _run(command, stmt, relations)
            if command.name == "parallelize":
                parallel = command
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
        parser = _Parser(value)
        node = parser.expr()
        parser.take("end")
        return node
    raise ScheduleError(f"Expected an index name, a number or an expression as a command argument, but found "
                        f"{type(value).__name__}")


def _check_arity(command: Command, text: str, column: int) -> None:
    if command.name not in ARITY:
        known = ", ".join(sorted(ARITY))
        raise ParseError(f"Expected a scheduling command ({known}), but found {command.name!r}", text, column + 1)
    low, high = ARITY[command.name]
    if len(command.args) < low or high is not None and len(command.args) > high:
        wanted = f"{low}" if low == high else f"{low} or more" if high is None else f"{low} to {high}"
        raise ParseError(f"Expected {wanted} arguments to {command.name}, but found {len(command.args)}", text,
                         column + 1)


class _CommandParser(_Parser):
    def literal(self, token) -> Literal:
        """Integers as written (a split of 2**70 is refused by range, not rounded to a double first)."""
        if not _is_integer(token.text):
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
                if self.peek().text == "path" and self.tokens[self.at + 1].text == "=":
                    self.take()
                    self.take("=")
                    path = self.path()
                elif self.peek().text == "[":
                    args.append(self.path())
                else:
                    args.append(self.expr())
            self.take(")")
            command = Command(name.text, tuple(args), path)
            _check_arity(command, self.text, name.column - 1)
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


def _name(node, command: Command) -> str:
    if isinstance(node, notation.Access) and not node.indices:
        return node.tensor
    raise ScheduleError(f"{command}: expected a name, but found {node}")


def _tensor_name(node, command: Command) -> str:
    """A tensor named bare (`B`) or by an access (`B(i,j)`)."""
    return node.tensor if isinstance(node, notation.Access) else _name(node, command)


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
    if name == "reorder" and command.path is not None:
        order = tuple(_name(a, command) for a in args)
        return branched.reorder(stmt, order, command.path.steps, str(command)), relations
    if name == "reorder":
        return commands.reorder(stmt, tuple(_index(a, command) for a in args)), relations
    if name == "loopfuse":
        if not isinstance(args[2], Path):
            raise ScheduleError(f"{command}: expected a path such as [] or [1, 0] as the third argument")
        pol = {"true": True, "false": False}.get(_name(args[1], command))
        if pol is None:
            raise ScheduleError(f"{command}: expected true or false (is the producer on the left?)")
        return branched.loopfuse(stmt, _integer(args[0], command), pol, args[2].steps, str(command)), relations
    if name == "precompute":
        fmt = _name(args[3], command) if len(args) > 3 else None
        return commands.precompute(stmt, args[0], _index(args[1], command), _index(args[2], command), fmt,
                                   Provenance(relations)), relations
    if name == "parallelize":
        return commands.parallelize(stmt, _index(args[0], command), _choice(ParallelUnit, args[1], command),
                                    _choice(Race, args[2], command), Provenance(relations)), relations
    if name == "coiterate":
        tensor = _tensor_name(args[2], command) if len(args) > 2 else None
        return commands.coiterate(stmt, _index(args[0], command), _choice(Strategy, args[1], command), tensor), relations
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
