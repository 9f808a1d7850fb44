"""A builder of C AST statements whose context managers mirror the C structure being built:

    with b.for_(b.decl("int64_t", "i", 0, inline=True), lt(i, n), increment(i)):
        b.assign(y[i], 0)

Nested statements land in the innermost open block, so lowering code reads like the C it produces.
`fail` is how generated code gives up (out of memory, an index type outgrown): a `return` in serial
code; inside an OpenMP region, which no code may leave, it raises the region's flag and jumps to the end
of what it was doing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from . import printer
from .c_ast import (Assign, Block, Break, Comment, Continue, CType, Decl, Directive, Expr, ExprStmt, For, Goto, If,
                    Label, OmpAtomic, OmpBarrier, Return, Stmt, Var, While, as_expr, increment, lt, not_)


class CBuilder:
    def __init__(self):
        self._open: list[list[Stmt]] = [[]]
        self._failures: list[tuple[str, str]] = []  # (flag, label) of the regions around, innermost last

    # --- plain statements ---

    def add(self, *stmts: Stmt) -> None:
        self._open[-1].extend(stmts)

    def extend(self, block: Block) -> None:
        """The statements of `block`, spliced here (another builder's body)."""
        self.add(*block.body)

    def decl(self, ctype: "CType | str", name: str, init=None, length: int | None = None) -> Var:
        """Declare `name` (an array of `length` when given); returns the variable, to use in what follows."""
        self.add(Decl(ctype, name, None if init is None else as_expr(init), length))
        return Var(name)

    def assign(self, target, value, op: str = "=") -> None:
        self.add(Assign(as_expr(target), as_expr(value), op))

    def expr(self, expr) -> None:
        self.add(ExprStmt(as_expr(expr)))

    def comment(self, text: str) -> None:
        self.add(Comment(text))

    def pragma(self, directive: Directive) -> None:
        self.add(directive)

    def return_(self, value=None) -> None:
        self.add(Return(None if value is None else as_expr(value)))

    def break_(self) -> None:
        self.add(Break())

    def continue_(self) -> None:
        self.add(Continue())

    def goto(self, label: str) -> None:
        self.add(Goto(label))

    def label(self, name: str) -> None:
        self.add(Label(name))

    # --- nested statements ---

    @contextmanager
    def _nested(self) -> Iterator[list[Stmt]]:
        self._open.append([])
        body = self._open[-1]
        try:
            yield body
        finally:
            self._open.pop()

    @contextmanager
    def block(self) -> Iterator[None]:
        with self._nested() as body:
            yield
        self.add(Block(tuple(body)))

    @contextmanager
    def if_(self, condition) -> Iterator[None]:
        with self._nested() as body:
            yield
        self.add(If(as_expr(condition), Block(tuple(body))))

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The else branch of the `if` just built."""
        last = self._open[-1][-1]
        if not isinstance(last, If) or last.otherwise is not None:
            raise AssertionError(f"Expected an if without else before else_, but found {last!r}")
        with self._nested() as body:
            yield
        self._open[-1][-1] = If(last.condition, last.then, Block(tuple(body)))

    @contextmanager
    def when(self, condition) -> Iterator[None]:
        """An if when there is a `condition`; nothing around the body when it is None."""
        if condition is None:
            yield
        else:
            with self.if_(condition):
                yield

    @contextmanager
    def for_(self, init: Stmt | None, condition, step) -> Iterator[None]:
        """`for (init; condition; step)`: `init` a Decl or Assign, `step` an expression (`increment(i)`) or
        an Assign (`for_range` makes the usual loop)."""
        with self._nested() as body:
            yield
        step = step if isinstance(step, Stmt) or step is None else as_expr(step)
        self.add(For(init, None if condition is None else as_expr(condition), step, Block(tuple(body))))

    def for_range(self, name: str, begin, end):
        """`for (int64_t name = begin; name < end; name++)`."""
        return self.for_(Decl("int64_t", name, as_expr(begin)), lt(Var(name), end), increment(Var(name)))

    @contextmanager
    def while_(self, condition) -> Iterator[None]:
        with self._nested() as body:
            yield
        self.add(While(as_expr(condition), Block(tuple(body))))

    # --- failures ---

    def fail(self, condition, code) -> None:
        """Give up with `code` (nonzero: a ReturnCode, or the variable holding one) when `condition` holds."""
        code = code if isinstance(code, Expr) else as_expr(int(code))
        if not self._failures:
            with self.if_(condition):
                self.return_(code)
            return
        flag, label = self._failures[-1]
        with self.if_(condition):
            self.pragma(OmpAtomic("write"))
            self.assign(Var(flag), code)
            self.goto(label)

    def agreed(self, flag: str, name: str) -> Expr:
        """Inside an OpenMP region, a condition every thread finds alike (as a worksharing loop behind it
        needs): that nothing raised `flag` so far. Each thread reads the flag into `name`, then all wait,
        so no failure after the reads can split them."""
        self.decl("int", name)
        self.pragma(OmpAtomic("read"))
        self.assign(Var(name), Var(flag))
        self.pragma(OmpBarrier())
        return not_(Var(name))

    @property
    def failure_flag(self) -> str | None:
        """The flag a failure raises here (None: failures return)."""
        return self._failures[-1][0] if self._failures else None

    @contextmanager
    def failing_to(self, flag: str, label: str) -> Iterator[None]:
        """Failures in the body raise `flag` and skip to its end (where `label` is placed)."""
        self._failures.append((flag, label))
        try:
            yield
        finally:
            self._failures.pop()
        self.label(label)

    # --- what was built ---

    def statements(self) -> Block:
        if len(self._open) != 1:
            raise AssertionError("Expected every nested statement closed before reading the builder")
        return Block(tuple(self._open[0]))

    def text(self, depth: int = 0) -> str:
        return "\n".join(printer.statements(stmt, depth) for stmt in self.statements().body)
