"""Text -> concrete index notation, so a schedule can be written by hand and compiled.

    stmt   := ("∀" | "forall") NAME mark* stmt
            | "where" "(" stmt "," stmt ")"          (consumer, producer)
            | "sequence" "(" stmt "," stmt ")"
            | access ("=" | "+=" | REDUCTION "=") expr       (REDUCTION: min, max, prod, any, all)
    access := NAME "(" [index ("," index)*] ")"      index := NAME ["@" ("step"|"locate"|"append"|"insert")]
    mark   := "@" "parallel" "(" UNIT "," RACE ")" | "@" "unroll" "(" NUMBER ")"
            | "@" "coiterate" "(" STRATEGY ("," NAME "=" STRATEGY)* ")"

Expressions are the index notation's. Each tensor's format comes from `formats`; a tensor written inside
a `where` producer is a temporary (dense unless `formats` says otherwise). Omitted protocols take their
defaults, so `str(parse_cin(str(stmt), formats)) == str(stmt)`.
"""

from __future__ import annotations

import enum
from typing import Mapping

from ..errors import ParseError, ScheduleError
from ..format import Format
from ..format.spec import as_format
from ..notation.ast import IndexVar
from ..notation.operators import REDUCTIONS, Value
from ..notation.parser import ExpressionParser
from .ast import (MAX_UNROLL, Access, Assign, Coiteration, Forall, Parallel, ParallelUnit, Protocol, Race, Sequence,
                  Stmt, Strategy, TensorVar, Where, default_protocol, identity, walk)
from .rewrite import sums_to_wheres

_KEYWORDS = {"forall", "where", "sequence"}


class _CinParser(ExpressionParser):
    def __init__(self, text: str, formats: Mapping[str, Format], temporaries: Mapping[str, Value],
                 fills: Mapping[str, Value] = {}):
        super().__init__(text)
        self.formats, self.temporaries, self.fills = formats, temporaries, fills
        self.writing = False

    def statement(self) -> Stmt:
        token = self.peek()
        if token.text in ("∀", "forall"):
            self.take()
            index = IndexVar(self.take("name").text)
            parallel, unroll, coiterate = None, 0, None
            while self.peek().text == "@":
                self.take()
                mark = self.take("parallel", "unroll", "coiterate")
                self.take("(")
                if mark.text == "parallel":
                    unit = self.choice(ParallelUnit, "a parallel unit")
                    self.take(",")
                    parallel = Parallel(unit, self.choice(Race, "a race strategy"))
                elif mark.text == "coiterate":
                    coiterate = Coiteration(self.choice(Strategy, "a co-iteration strategy"))
                    while self.peek().text == ",":
                        self.take()
                        tensor = self.take("name").text
                        self.take("=")
                        coiterate = coiterate.with_strategy(self.choice(Strategy, "a co-iteration strategy"), tensor)
                else:
                    unroll = self.unroll_factor()
                self.take(")")
            return Forall(index, self.statement(), parallel, unroll, coiterate)
        if token.text in ("where", "sequence"):
            self.take()
            self.take("(")
            first = self.statement()
            self.take(",")
            second = self.statement()
            self.take(")")
            return (Where if token.text == "where" else Sequence)(first, second)
        self.writing = True
        lhs = self.access(self.take("name"))
        self.writing = False
        if self.peek().text in REDUCTIONS:  # `y(i) min= e`: the reduction's word, then `=`
            reduce = REDUCTIONS[self.take().text].name
            self.take("=")
            return Assign(lhs, self.expr(), accumulate=True, reduce=reduce)
        operator = self.take("=", "+=")
        return Assign(lhs, self.expr(), accumulate=operator.text == "+=")

    def access(self, name) -> Access:
        if name.text in _KEYWORDS:
            raise ParseError(f"Expected a tensor name, but found the keyword {name.text!r}", self.text, name.column)
        indices, protocols = [], []
        self.take("(")
        while self.peek().text != ")":
            if indices:
                self.take(",")
            index = self.take("name")
            indices.append(IndexVar(index.text))
            protocols.append(self.protocol() if self.peek().text == "@" else None)
        self.take(")")
        tensor = self.tensor(name, len(indices))
        fmt = tensor.format
        if isinstance(self.formats, _AnyDense):
            protocols = [None] * len(indices)
        chosen = tuple(p or default_protocol(fmt.levels[fmt.mode_order.index(m)], self.writing, tensor.temporary)
                       for m, p in enumerate(protocols))
        try:
            return Access(tensor, tuple(indices), chosen)
        except ScheduleError as error:
            raise ParseError(str(error), self.text, name.column) from None

    def protocol(self) -> Protocol:
        self.take("@")
        return self.choice(Protocol, "a protocol")

    def unroll_factor(self) -> int:
        """Checked here, where its column is known: lowering writes it into `#pragma GCC unroll`."""
        token = self.take("number")
        if not token.text.isdigit() or not 1 <= int(token.text) <= MAX_UNROLL:
            raise ParseError(f"Expected an unroll factor from 1 to {MAX_UNROLL}, but found {token.text}", self.text,
                             token.column)
        return int(token.text)

    def choice(self, kind: type[enum.Enum], what: str):
        """The member of `kind` that the next name spells."""
        token = self.take("name")
        try:
            return kind(token.text)
        except ValueError:
            spellings = ", ".join(member.value for member in kind)
            raise ParseError(f"Expected {what} ({spellings}), but found {token.text!r}", self.text,
                             token.column) from None

    def tensor(self, name, order: int) -> TensorVar:
        temporary = name.text in self.temporaries
        if name.text not in self.formats and not temporary:
            raise ParseError(f"Expected a format for {name.text}, but none was given", self.text, name.column)
        try:
            fmt = as_format(self.formats.get(name.text, "dense"), order)
        except Exception as error:
            raise ParseError(f"Expected a format of order {order} for {name.text}: {error}", self.text,
                             name.column) from None
        fill = self.temporaries[name.text] if temporary else self.fills.get(name.text, 0)
        return TensorVar(name.text, fmt, temporary, fill)


def parse_cin(text: str, formats: Mapping[str, "str | Format"], fills: Mapping[str, Value] = {}) -> Stmt:
    """Parse a CIN statement; the tensors not in `formats` must be temporaries, each starting at the
    identity of the reduction its producer writes it with (0 for `+=` and `=`). `fills`: the operands' and
    the result's fills (0 where not given). A sum in an assignment (`∑j e` or `sum(j, e)`) is computed by
    a `where` producer into a scalar temporary."""
    first = _CinParser(text, {}, {})
    temporaries = _written_in_producers(text, first)
    parser = _CinParser(text, formats, temporaries, fills)
    stmt = parser.statement()
    parser.take("end")
    return sums_to_wheres(stmt, {*formats, *temporaries})


def _written_in_producers(text: str, scout: _CinParser) -> dict[str, Value]:
    """The names assigned inside a where's producer, with the value each starts at, found by a first pass
    that treats every tensor as a dense temporary (formats do not matter for finding them)."""
    scout.formats = _AnyDense()
    stmt = scout.statement()
    names: dict[str, Value] = {}
    for node in walk(stmt):
        if isinstance(node, Where):
            names.update((n.lhs.tensor.name, identity(n.reduce) if n.accumulate else 0)
                         for n in walk(node.producer) if isinstance(n, Assign))
    return names


class _AnyDense(dict):
    def __contains__(self, key) -> bool:
        return True

    def get(self, key, default=None):
        return "dense"
