"""A C source builder whose context managers mirror the C structure being emitted:

    with b.block("for (int64_t i = 0; i < n; i++)"):
        b.line("y[i] = 0;")

Blocks indent themselves, so lowering code reads like the C it produces. `fail` is how generated code
gives up (out of memory, an index type outgrown): a `return` in serial code; inside an OpenMP region,
which no code may leave, it raises the region's flag and jumps to the end of what it was doing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class CBuilder:
    def __init__(self, depth: int = 1):
        self._lines: list[str] = []
        self._depth = depth
        self._failures: list[tuple[str, str]] = []  # (flag, label) of the regions around, innermost last

    def line(self, text: str) -> None:
        self._lines.append("    " * self._depth + text)

    def lines(self, text: str) -> None:
        for line in text.strip("\n").splitlines():
            self.line(line)

    def comment(self, text: str) -> None:
        self.line(f"/* {text} */")

    @contextmanager
    def block(self, header: str = "") -> Iterator[None]:
        self.line(f"{header} {{" if header else "{")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self.line("}")

    @contextmanager
    def scope(self, header: str) -> Iterator[None]:
        """A block when `header` says what it is for (if, else, ...); nothing around the body otherwise."""
        if header:
            with self.block(header):
                yield
        else:
            yield

    def fail(self, condition: str, code: "int | str") -> None:
        """Give up with `code` (nonzero) when `condition` holds."""
        if not self._failures:
            self.line(f"if ({condition}) return {code if isinstance(code, str) else int(code)};")
            return
        flag, label = self._failures[-1]
        with self.block(f"if ({condition})"):
            self.line("#pragma omp atomic write")
            self.line(f"{flag} = {code if isinstance(code, str) else int(code)};")
            self.line(f"goto {label};")

    def agreed(self, flag: str, name: str) -> str:
        """Inside an OpenMP region, a condition every thread finds alike (as a worksharing loop behind it
        needs): that nothing raised `flag` so far. Each thread reads the flag into `name`, then all wait,
        so no failure after the reads can split them."""
        self.line(f"int {name};")
        self.line("#pragma omp atomic read")
        self.line(f"{name} = {flag};")
        self.line("#pragma omp barrier")
        return f"!{name}"

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
        self.line(f"{label}:;")

    def text(self) -> str:
        return "\n".join(self._lines)
