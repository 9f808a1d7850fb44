"""A C source builder whose context managers mirror the C structure being emitted:

    with b.block("for (int64_t i = 0; i < n; i++)"):
        b.line("y[i] = 0;")

Blocks indent themselves, so lowering code reads like the C it produces.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class CBuilder:
    def __init__(self, depth: int = 1):
        self._lines: list[str] = []
        self._depth = depth

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

    def text(self) -> str:
        return "\n".join(self._lines)
