"""Text -> index notation: `C(i,j) = A(i,k) * B(k,j) + 2 * D(i,j)`.

A recursive-descent parser over a small grammar; every error names the column where reading failed.

    assignment := access ("=" | "+=") expr
    expr       := term (("+" | "-") term)*
    term       := factor ("*" factor)*
    factor     := "-" factor | number | access | "(" expr ")"
    access     := NAME "(" [NAME ("," NAME)*] ")" | NAME        (a bare NAME is a scalar)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from .ast import Access, Add, Assignment, Expr, IndexVar, Literal, Mul, Neg, Sub, accesses

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?) |
    (?P<name>[A-Za-z_][A-Za-z_0-9]*) |
    (?P<op>\+=|[=+\-*(),∀@;\[\]]) )""", re.VERBOSE)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "number", "name", "op" or "end"
    text: str
    column: int


def _tokens(text: str) -> list[_Token]:
    tokens, offset = [], 0
    while True:
        while offset < len(text) and text[offset].isspace():
            offset += 1
        if offset == len(text):
            return tokens + [_Token("end", "end of input", offset + 1)]
        match = _TOKEN.match(text, offset)
        if match is None or match.end() == offset:
            raise ParseError(f"Expected a name, a number or one of = += + - * ( ) , but found {text[offset]!r}",
                             text, offset + 1)
        kind = match.lastgroup
        tokens.append(_Token(kind, match.group(kind), match.start(kind) + 1))
        offset = match.end()


class _Parser:
    def __init__(self, text: str):
        self.text, self.tokens, self.at = text, _tokens(text), 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self, *expected: str) -> _Token:
        token = self.peek()
        if expected and token.text not in expected and token.kind not in expected:
            wanted = " or ".join(repr(e) if e not in ("name", "number", "end") else
                                 ("the end" if e == "end" else f"a {e}") for e in expected)
            raise ParseError(f"Expected {wanted}, but found {token.text!r}", self.text, token.column)
        self.at += 1
        return token

    def assignment(self) -> Assignment:
        lhs = self.access(self.take("name"))
        operator = self.take("=", "+=")
        rhs = self.expr()
        self.take("end")
        return Assignment(lhs, rhs, accumulate=operator.text == "+=")

    def expr(self) -> Expr:
        node = self.term()
        while self.peek().text in ("+", "-"):
            operator = self.take().text
            node = (Add if operator == "+" else Sub)(node, self.term())
        return node

    def term(self) -> Expr:
        node = self.factor()
        while self.peek().text == "*":
            self.take()
            node = Mul(node, self.factor())
        return node

    def factor(self) -> Expr:
        token = self.take("-", "(", "name", "number")
        if token.text == "-":
            return Neg(self.factor())
        if token.text == "(":
            node = self.expr()
            self.take(")")
            return node
        if token.kind == "number":
            return Literal(float(token.text) if any(c in token.text for c in ".eE") else int(token.text))
        return self.access(token)

    def access(self, name: _Token) -> Access:
        if self.peek().text != "(":
            return Access(name.text, (), name.column)
        self.take("(")
        indices: list[_Token] = []
        if self.peek().text != ")":
            indices.append(self.take("name"))
            while self.peek().text == ",":
                self.take()
                indices.append(self.take("name"))
        self.take(")")
        return Access(name.text, tuple(IndexVar(t.text) for t in indices), name.column,
                      tuple(t.column for t in indices))


def parse(text: str) -> Assignment:
    """Parse and check an assignment: no repeated index within an access, every output index used on
    the right, the output not read on the right, each tensor used with one order."""
    assignment = _Parser(text).assignment()
    _check(assignment, text)
    return assignment


def _check(assignment: Assignment, text: str) -> None:
    lhs, used = assignment.lhs, accesses(assignment.rhs)
    for access in (lhs, *used):
        for position, index in enumerate(access.indices):
            if index in access.indices[:position]:
                raise ParseError(f"Expected distinct indices in {access}, but {index} repeats", text,
                                 access.index_columns[position])
    on_the_right = {index for access in used for index in access.indices}
    for index, column in zip(lhs.indices, lhs.index_columns):
        if index not in on_the_right:
            raise ParseError(f"Expected the output index {index} on the right-hand side, but it is not used",
                             text, column)
    orders: dict[str, Access] = {}
    for access in used:
        if access.tensor == lhs.tensor:
            raise ParseError(f"Expected the output {lhs.tensor} only on the left-hand side, but it is read",
                             text, access.column)
        first = orders.setdefault(access.tensor, access)
        if len(first.indices) != len(access.indices):
            raise ParseError(f"Expected {access.tensor} with {len(first.indices)} indices as in {first}, "
                             f"but found {access}", text, access.column)
