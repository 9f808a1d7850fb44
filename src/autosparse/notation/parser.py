"""Text -> index notation: `C(i,j) = A(i,k) * B(k,j) + 2 * D(i,j)`.

A recursive-descent parser over a small grammar; every error names the column where reading failed.
`ExpressionParser` is also the base of the languages that embed these expressions (concrete index
notation, the scheduling commands).

    assignment := access ("=" | "+=") expr
    expr       := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := "-" factor | number | reduction | function | access | "(" expr ")"
    reduction  := REDUCTION "(" NAME "," expr ")" | "∑" NAME term      (sum, prod, min, max, any, all)
    function   := FUNCTION "(" expr ("," expr)* ")"                   (maximum, exp, where, pattern …)
    access     := NAME "(" [NAME ("," NAME)*] ")" | NAME        (a bare NAME is a scalar)

The registry's words (`operators.REDUCTIONS`, `operators.FUNCTIONS`) followed by `(` are words of the
language, not tensor names, on the right; a reduction takes its index first, as `sum` does, so
`min(j, e)` reduces and `minimum(a, b)` compares element-wise. Reductions are then scoped by TACO's
rule (`scope.py`). Integer literals that do not fit int64 become the nearest double, as in numpy; a
literal past the largest double is a ParseError. Expressions nested deeper than `MAX_DEPTH` are
refused: every later stage walks the tree recursively.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import ParseError
from .ast import (REDUCING, Access, Add, Apply, Assignment, Div, Expr, IndexVar, Literal, Mul, Neg, Reduce, Sub, Sum,
                  accesses, unbound_indices, walk)
from .operators import FUNCTIONS, REDUCTIONS
from .scope import scope_reductions

_TOKEN = re.compile(r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?) |
    (?P<name>[A-Za-z_][A-Za-z_0-9]*) |
    (?P<op>\+=|[=+\-*/(),∀∑@;\[\]]) )""", re.VERBOSE)

#: The deepest expression tree accepted (each operator, parenthesis and sum is one level).
MAX_DEPTH = 200

_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "number", "name", "op" or "end"
    text: str
    column: int

    @property
    def is_integer(self) -> bool:
        """A number written without a point or an exponent (only meaningful for a "number" token)."""
        return not any(c in self.text for c in ".eE")


def _tokens(text: str) -> list[Token]:
    tokens, offset = [], 0
    while True:
        while offset < len(text) and text[offset].isspace():
            offset += 1
        if offset == len(text):
            return tokens + [Token("end", "end of input", offset + 1)]
        match = _TOKEN.match(text, offset)
        if match is None or match.end() == offset:
            raise ParseError(f"Expected a name, a number or one of = += + - * / ( ) , but found {text[offset]!r}",
                             text, offset + 1)
        kind = match.lastgroup
        tokens.append(Token(kind, match.group(kind), match.start(kind) + 1))
        offset = match.end()


class ExpressionParser:
    """The index notation's reader, and the base of the languages built on its expressions (concrete
    index notation, the scheduling commands): they add their own statements on top of `expr`, reading
    tokens with `peek` and `take`. Their extension points are `literal` (how a number token becomes a
    literal) and `access` (how a name after which an access may follow is read); `text` is what errors
    quote, with the column of the token that failed."""

    def __init__(self, text: str):
        self.text = text
        self._tokens, self._at, self._depth = _tokens(text), 0, 0

    def peek(self, ahead: int = 0) -> Token:
        """The next token (or the one `ahead` after it), not consumed; past the end, the end token."""
        return self._tokens[min(self._at + ahead, len(self._tokens) - 1)]

    def take(self, *expected: str) -> Token:
        """The next token, consumed; a ParseError unless its text or kind is one of `expected` (when given)."""
        token = self.peek()
        if expected and token.text not in expected and token.kind not in expected:
            wanted = " or ".join(repr(e) if e not in ("name", "number", "end") else
                                 ("the end" if e == "end" else f"a {e}") for e in expected)
            raise ParseError(f"Expected {wanted}, but found {token.text!r}", self.text, token.column)
        self._at += 1
        return token

    def expression(self) -> Expr:
        """The whole text as one expression."""
        node = self.expr()
        self.take("end")
        return node

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
        while self.peek().text in ("*", "/"):
            operator = self.take().text
            node = (Mul if operator == "*" else Div)(node, self.factor())
        return node

    def factor(self) -> Expr:
        token = self.take("-", "(", "∑", "name", "number")
        if token.kind == "number":
            return self.literal(token)
        if token.kind == "name" and not (token.text in _WORDS and self.peek().text == "("):
            return self.access(token)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ParseError(f"Expected an expression nested at most {MAX_DEPTH} deep, but it goes deeper",
                             self.text, token.column)
        node = self.nested(token)
        self._depth -= 1
        return node

    def literal(self, token: Token) -> Literal:
        return _literal(token, self.text)

    def nested(self, token: Token) -> Expr:
        """The factors that contain an expression: a negation, parentheses, a reduction, a function."""
        if token.text == "-":
            return Neg(self.factor())
        if token.text == "∑":
            return Sum(IndexVar(self.take("name").text), self.term())
        if token.text in REDUCTIONS:
            return self._reduction(token)
        if token.text in FUNCTIONS:
            return self._function(token)
        node = self.expr()
        self.take(")")
        return node

    def _reduction(self, word: Token) -> Expr:
        """`min(j, e)`: the index first, then the body."""
        self.take("(")
        if word.text != "sum" and not (self.peek().kind == "name" and self.peek(1).text == ","):
            element_wise = {"min": "minimum", "max": "maximum"}.get(word.text)
            hint = f"; for the element-wise {element_wise} write {element_wise}(a, b)" if element_wise else ""
            raise ParseError(f"Expected {word.text}(index, expression): {word.text} is a reduction word, not a "
                             f"tensor name{hint}", self.text, word.column)
        index = IndexVar(self.take("name").text)
        self.take(",")
        body = self.expr()
        self.take(")")
        op = REDUCTIONS[word.text]
        return Sum(index, body) if op.name == "add" else Reduce(op.name, index, body, word.column)

    def _function(self, word: Token) -> Apply:
        """`maximum(a, b)`: as many arguments as the function takes, or a ParseError at its name."""
        self.take("(")
        args = [self.expr()]
        while self.peek().text == ",":
            self.take()
            args.append(self.expr())
        self.take(")")
        arity = FUNCTIONS[word.text].arity
        if len(args) != arity:
            raise ParseError(f"Expected {arity} argument{'s' if arity > 1 else ''} of the function {word.text}, "
                             f"but found {len(args)}: {word.text} is a function, not a tensor name",
                             self.text, word.column)
        return Apply(word.text, tuple(args), word.column)

    def access(self, name: Token) -> Access:
        if self.peek().text != "(":
            return Access(name.text, (), name.column)
        self.take("(")
        indices: list[Token] = []
        if self.peek().text != ")":
            indices.append(self.take("name"))
            while self.peek().text == ",":
                self.take()
                indices.append(self.take("name"))
        self.take(")")
        return Access(name.text, tuple(IndexVar(t.text) for t in indices), name.column,
                      tuple(t.column for t in indices))


def _literal(token: Token, text: str) -> Literal:
    """An int64 when the digits are an integer that fits, else the double nearest to them, as numpy
    reads a Python number too large for int64 (`99999999999999999999999` is 1e23); a literal past the
    largest double is refused, as numpy refuses it."""
    value = token.text
    if token.is_integer and len(value.lstrip("0")) <= 19 and int(value) <= _INT64_MAX:
        return Literal(int(value))
    number = float(value)
    if math.isinf(number):
        raise ParseError(f"Expected a literal a double can hold, but {value[:40]}{'…' if len(value) > 40 else ''} "
                         f"overflows", text, token.column)
    return Literal(number)


#: The names that are words of the language when a `(` follows them.
_WORDS = frozenset(REDUCTIONS) | frozenset(FUNCTIONS)


def parse(text: str) -> Assignment:
    """Parse and check an assignment (no repeated index in the output, every output index used on
    the right, the output not read on the right, each tensor used with one order, each `sum` over an
    index only it uses), then scope its reductions by TACO's rule."""
    if not isinstance(text, str):  # a user's mistake, not an attribute missing deep in the pipeline
        raise ParseError(f"Expected an assignment as text, such as 'y(i) = A(i,j) * x(j)', but found "
                         f"{type(text).__name__}", f"{text!r:.80}", 1)
    assignment = ExpressionParser(text).assignment()
    _check_depth(assignment, text)
    _check_functions(assignment, text)
    _check(assignment, text)
    _check_sums(assignment, text)
    return scope_reductions(assignment)


def _check_depth(assignment: Assignment, text: str) -> None:
    """Long chains of terms or factors nest as deep as parentheses do: refuse them before any recursive
    pass sees them. Measured without recursion."""
    stack = [(assignment.rhs, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            column = _first_column(node, text)
            raise ParseError(f"Expected an expression nested at most {MAX_DEPTH} deep (terms and factors "
                             f"count), but it goes deeper: sum the parts in separate assignments", text, column)
        stack.extend((child, depth + 1) for child in node.children())


def _check_sums(assignment: Assignment, text: str) -> None:
    """A reduction binds an index that is not the output's, is used in its body, and is used nowhere else."""
    for node in walk(assignment.rhs):
        if not isinstance(node, REDUCING):
            continue
        word = "sum" if isinstance(node, Sum) else str(node).split("(", 1)[0]
        body_uses = [a for a in accesses(node.body) if node.index in a.indices]
        column = body_uses[0].column if body_uses else _first_column(node.body, text)
        if node.index in assignment.lhs.indices:
            raise ParseError(f"Expected {word}({node.index}, ...) over an index not in the output "
                             f"{assignment.lhs}, but {node.index} is in it", text, column)
        if node.index not in unbound_indices(node.body):  # unused, or bound again by a sum inside
            raise ParseError(f"Expected the index {node.index} of {word}({node.index}, ...) used in its body, but "
                             f"{node.body} does not use it ({word} is a reduction word, not a tensor name)",
                             text, column)
        if node.index in unbound_indices(assignment.rhs):
            raise ParseError(f"Expected {node.index} reduced by {word}({node.index}, ...) to be used only inside "
                             f"it, but it is used elsewhere too: name the two indices differently", text, column)


def _check_functions(assignment: Assignment, text: str) -> None:
    """A function's argument that is a bare index name (`exp(i)`) was meant as a tensor named like the
    function: say that the name is taken, at the function's column."""
    indices = {i.name for a in (assignment.lhs, *accesses(assignment.rhs)) for i in a.indices}
    for node in walk(assignment.rhs):
        if isinstance(node, Apply):
            for arg in node.args:
                if isinstance(arg, Access) and not arg.indices and arg.tensor in indices:
                    raise ParseError(f"Expected the argument of the function {node.op} to be an expression, but "
                                     f"found the index {arg.tensor}: {node.op} is a function, not a tensor name; "
                                     f"rename the tensor", text, node.column)


def _first_column(expr, text: str) -> int:
    """The column of the leftmost leaf of `expr` when it is an access (found without recursion)."""
    while expr.children():
        expr = expr.children()[0]
    return expr.column if isinstance(expr, Access) else len(text)


def _check(assignment: Assignment, text: str) -> None:
    lhs, used = assignment.lhs, accesses(assignment.rhs)
    for position, index in enumerate(lhs.indices):  # on the right, a repeated index reads a diagonal
        if index in lhs.indices[:position]:
            raise ParseError(f"Expected distinct indices in the output {lhs}, but {index} repeats", text,
                             lhs.index_columns[position])
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
