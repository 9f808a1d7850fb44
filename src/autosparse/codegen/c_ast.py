"""A small typed C AST: what lowering builds and `printer` turns into C text.

Expressions, statements and top-level declarations are frozen dataclasses holding tuples only, so a
fragment can be shared, compared and hashed (a level plug-in's `locate` answers with one). It holds just
what kernels need.

No node holds C text: every name is checked to be a C identifier when its node is made, every operator
to be one of C's, a type is a `CType` (a scalar or typedef'd name, const, pointers), an OpenMP pragma
a `Directive` with typed clauses, and a comment cannot close itself. So whatever lowering does with
strings, the only C text of a kernel is what `printer` writes.

Expressions combine with Python operators where C has the same one (`vals[p] * 2 + x`); comparisons and
logic, which Python cannot overload to build nodes, are functions (`lt(i, n)`, `and_(a, b)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
    _Thread_local""".split())


def identifier(name: str) -> str:
    """`name`, checked to be a C identifier, not a keyword (what every name a node holds must be)."""
    if not isinstance(name, str) or _IDENTIFIER.fullmatch(name) is None or name in _KEYWORDS:
        raise ValueError(f"Expected a C identifier, but found {name!r}")
    return name


def _one_of(value: str, allowed, what: str) -> str:
    if value not in allowed:
        raise ValueError(f"Expected {what} (one of {', '.join(sorted(allowed))}), but found {value!r}")
    return value


#: The scalar types kernels use; any other type is a typedef'd name (a workspace's entry struct).
SCALARS = frozenset({"void", "int", "char", "size_t", "int32_t", "int64_t", "uint64_t", "float", "double",
                     "double _Complex"})
_TYPE = re.compile(r"(const )?(double _Complex|[A-Za-z_][A-Za-z_0-9]*)(?: (\*+)(restrict)?)?")


@dataclass(frozen=True, slots=True, eq=False)
class CType:
    """A C type as kernels write one: `const`, a scalar or typedef'd `base`, then `pointers` stars, the
    outermost `restrict` when asked (`const int64_t *restrict`, `void **restrict`)."""

    base: str
    const: bool = False
    pointers: int = 0
    restrict: bool = False

    def __post_init__(self):
        if self.base not in SCALARS:
            identifier(self.base)
        if self.pointers < 0 or (self.restrict and not self.pointers):
            raise ValueError(f"Expected restrict only on a pointer, but found {self!r}")

    def _key(self) -> tuple:
        return self.base, self.const, self.pointers, self.restrict

    def __eq__(self, other) -> bool:
        """Equal to the same type; comparing with text is a mistake left from when types were text."""
        if isinstance(other, str):
            raise TypeError(f"Expected a CType to compare {self!r} with, but found the text {other!r}")
        return isinstance(other, CType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def pointer(self, restrict: bool = False) -> "CType":
        """A pointer to this type."""
        return CType(self.base, self.const, self.pointers + 1, restrict)

    def constant(self) -> "CType":
        """This type, const (what a pointer to it cannot change)."""
        return CType(self.base, True, self.pointers, self.restrict)


def ctype(value: "CType | str") -> CType:
    """`value` as a CType: a type's usual spelling (`"const int64_t *restrict"`) is read back into one,
    anything else refused."""
    if isinstance(value, CType):
        return value
    match = _TYPE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"Expected a C type (const, a scalar or typedef'd name, pointers), but found {value!r}")
    const, base, stars, restrict = match.groups()
    return CType(base, const is not None, len(stars or ""), restrict is not None)


def _set(node, field: str, value) -> None:
    """Normalise a field of a frozen node while it is made."""
    object.__setattr__(node, field, value)


class Expr:
    """A C expression. `str()` shows it as `printer` writes an operand, for reading and debugging; nothing
    builds C from that text (a node takes only names, which such text never is)."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import operand
        return operand(self)

    def __add__(self, other) -> "Expr":
        return Binary("+", self, as_expr(other))

    def __radd__(self, other) -> "Expr":
        return Binary("+", as_expr(other), self)

    def __sub__(self, other) -> "Expr":
        return Binary("-", self, as_expr(other))

    def __rsub__(self, other) -> "Expr":
        return Binary("-", as_expr(other), self)

    def __mul__(self, other) -> "Expr":
        return Binary("*", self, as_expr(other))

    def __rmul__(self, other) -> "Expr":
        return Binary("*", as_expr(other), self)

    def __floordiv__(self, other) -> "Expr":
        """C's `/` (integer division truncates, as Python's `//` does for the nonnegative values kernels divide)."""
        return Binary("/", self, as_expr(other))

    def __mod__(self, other) -> "Expr":
        return Binary("%", self, as_expr(other))

    def __and__(self, other) -> "Expr":
        return Binary("&", self, as_expr(other))

    def __or__(self, other) -> "Expr":
        return Binary("|", self, as_expr(other))

    def __xor__(self, other) -> "Expr":
        return Binary("^", self, as_expr(other))

    def __rshift__(self, other) -> "Expr":
        return Binary(">>", self, as_expr(other))

    def __lshift__(self, other) -> "Expr":
        return Binary("<<", self, as_expr(other))

    def __neg__(self) -> "Expr":
        return Unary("-", self)

    def __getitem__(self, index) -> "Expr":
        return Index(self, as_expr(index))

    def field(self, name: str) -> "Expr":
        return Member(self, name)


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A name: a variable, an array, or a constant the headers define (`INT64_MAX`, `NULL`)."""

    name: str

    def __post_init__(self):
        identifier(self.name)


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """An integer or floating constant, printed as Python writes it (`repr`), then `suffix` (`ull`)."""

    value: int | float
    suffix: str = ""

    def __post_init__(self):
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise TypeError(f"Expected an int or a float, but found {self.value!r}")
        _one_of(self.suffix, ("", "u", "ull"), "an integer suffix")


@dataclass(frozen=True, slots=True)
class Index(Expr):
    base: Expr
    index: Expr


@dataclass(frozen=True, slots=True)
class Member(Expr):
    """`base.field` (a struct's field: a hash table entry's key)."""

    base: Expr
    field: str

    def __post_init__(self):
        identifier(self.field)


@dataclass(frozen=True, slots=True)
class Initializer(Expr):
    """`{a, b}`: what an array declaration starts with."""

    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Call(Expr):
    function: str
    args: tuple[Expr, ...] = ()

    def __post_init__(self):
        identifier(self.function)


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """A prefix operator (`-x`, `!x`, `*p`, `&x`), or a postfix one (`i++`) when `postfix`."""

    op: str
    operand: Expr
    postfix: bool = False

    def __post_init__(self):
        _one_of(self.op, ("++", "--") if self.postfix else ("-", "!", "*", "&", "~"), "a unary operator")


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr

    def __post_init__(self):
        _one_of(self.op, BINARY_OPERATORS, "a binary operator")


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    type: CType
    operand: Expr

    def __post_init__(self):
        _set(self, "type", ctype(self.type))


@dataclass(frozen=True, slots=True)
class SizeOf(Expr):
    type: CType

    def __post_init__(self):
        _set(self, "type", ctype(self.type))


@dataclass(frozen=True, slots=True)
class Ternary(Expr):
    condition: Expr
    then: Expr
    otherwise: Expr


#: C's binary operators kernels use.
BINARY_OPERATORS = frozenset({"||", "&&", "|", "^", "&", "==", "!=", "<", "<=", ">", ">=", "<<", ">>", "+", "-",
                              "*", "/", "%"})


ASSIGNMENT_OPERATORS = frozenset({"=", *(op + "=" for op in ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"))})


def as_expr(value: "Expr | int | float | str") -> Expr:
    """A node for `value`: numbers become literals, a name (a C identifier, checked) a variable."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Literal(int(value))
    if isinstance(value, (int, float)):
        return Literal(value)
    if isinstance(value, str):
        return Var(value)
    raise TypeError(f"Expected a C expression, a number or a name, but found {value!r}")


def lt(left, right) -> Expr:
    return Binary("<", as_expr(left), as_expr(right))


def le(left, right) -> Expr:
    return Binary("<=", as_expr(left), as_expr(right))


def gt(left, right) -> Expr:
    return Binary(">", as_expr(left), as_expr(right))


def ge(left, right) -> Expr:
    return Binary(">=", as_expr(left), as_expr(right))


def eq(left, right) -> Expr:
    return Binary("==", as_expr(left), as_expr(right))


def ne(left, right) -> Expr:
    return Binary("!=", as_expr(left), as_expr(right))


def and_(*terms) -> Expr:
    """`a && b && ...` (left to right, as C reads it)."""
    out = as_expr(terms[0])
    for term in terms[1:]:
        out = Binary("&&", out, as_expr(term))
    return out


def or_(*terms) -> Expr:
    out = as_expr(terms[0])
    for term in terms[1:]:
        out = Binary("||", out, as_expr(term))
    return out


def not_(operand) -> Expr:
    return Unary("!", as_expr(operand))


def call(function: str, *args) -> Call:
    return Call(function, tuple(as_expr(a) for a in args))


def ternary(condition, then, otherwise) -> Ternary:
    return Ternary(as_expr(condition), as_expr(then), as_expr(otherwise))


def cast(type_: "CType | str", operand) -> Cast:
    return Cast(ctype(type_), as_expr(operand))


def increment(target) -> Unary:
    return Unary("++", as_expr(target), postfix=True)


def decrement(target) -> Unary:
    return Unary("--", as_expr(target), postfix=True)


def address_of(operand) -> Unary:
    return Unary("&", as_expr(operand))


# --- statements --------------------------------------------------------------------------------------


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """Statements; in braces when it stands alone inside another block."""

    body: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class Decl(Stmt):
    """`type name = init;`, or with a `length` the array `type name[length] = init;`."""

    type: CType
    name: str
    init: Expr | None = None
    length: int | None = None

    def __post_init__(self):
        _set(self, "type", ctype(self.type))
        identifier(self.name)
        if self.init is not None:
            _set(self, "init", as_expr(self.init))


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    """`target op value;` with op `=` or a compound assignment (`+=`, `|=`, ...)."""

    target: Expr
    value: Expr
    op: str = "="

    def __post_init__(self):
        _one_of(self.op, ASSIGNMENT_OPERATORS, "an assignment operator")


@dataclass(frozen=True, slots=True)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(frozen=True, slots=True)
class If(Stmt):
    condition: Expr
    then: Block
    otherwise: Block | None = None


@dataclass(frozen=True, slots=True)
class For(Stmt):
    init: Stmt | None
    condition: Expr | None
    step: Stmt | Expr | None
    body: Block


@dataclass(frozen=True, slots=True)
class While(Stmt):
    condition: Expr
    body: Block


@dataclass(frozen=True, slots=True)
class Return(Stmt):
    value: Expr | None = None


@dataclass(frozen=True, slots=True)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Goto(Stmt):
    label: str

    def __post_init__(self):
        identifier(self.label)


@dataclass(frozen=True, slots=True)
class Label(Stmt):
    name: str

    def __post_init__(self):
        identifier(self.name)


def _comment(text: str) -> str:
    if "*/" in text:
        raise ValueError(f"Expected comment text that does not close the comment, but found {text!r}")
    return text


@dataclass(frozen=True, slots=True)
class Comment(Stmt):
    text: str

    def __post_init__(self):
        _comment(self.text)


# --- pragmas: `#pragma ...`, each with the clauses kernels use, typed -----------------------------------


class Directive(Stmt):
    """A `#pragma` line."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Unroll(Directive):
    """`#pragma GCC unroll count`."""

    count: int

    def __post_init__(self):
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValueError(f"Expected a nonnegative unroll count, but found {self.count!r}")


@dataclass(frozen=True, slots=True)
class Section:
    """`array[0:length]`: an array section in an OpenMP clause (the whole of a dense result)."""

    array: Var
    length: Expr


@dataclass(frozen=True, slots=True)
class Reduction:
    """`reduction(op: items)`: each thread's (or lane's) own copies of `items`, starting at `op`'s identity
    (0 for `+`, the type's largest value for `min`), combined by `op`."""

    op: str
    items: tuple[Var | Section, ...]

    def __post_init__(self):
        _one_of(self.op, ("+", "*", "|", "min", "max", "&&", "||"), "a reduction operator")
        if not self.items or not all(isinstance(item, (Var, Section)) for item in self.items):
            raise ValueError(f"Expected variables or array sections to reduce, but found {self.items!r}")


@dataclass(frozen=True, slots=True)
class Schedule:
    """`schedule(kind)` or `schedule(kind, chunk)`: how a worksharing loop deals iterations to threads."""

    kind: str = "static"
    chunk: int | None = None

    def __post_init__(self):
        _one_of(self.kind, ("static", "dynamic", "guided"), "a loop schedule")


def _typed(value, types, what: str) -> None:
    if not isinstance(value, types):
        raise ValueError(f"Expected {what}, but found {value!r}")


def _reductions(reductions) -> None:
    if not isinstance(reductions, tuple) or not all(isinstance(r, Reduction) for r in reductions):
        raise ValueError(f"Expected a tuple of reduction clauses, but found {reductions!r}")


@dataclass(frozen=True, slots=True)
class OmpParallel(Directive):
    """`omp parallel`: a team of threads runs the next statement; with a `loop` schedule, `omp parallel
    for`, the team shares the next loop."""

    num_threads: Expr | None = None
    loop: Schedule | None = None
    reductions: tuple[Reduction, ...] = ()

    def __post_init__(self):
        _typed(self.num_threads, (Expr, type(None)), "a thread count")
        _typed(self.loop, (Schedule, type(None)), "a loop schedule")
        _reductions(self.reductions)


@dataclass(frozen=True, slots=True)
class OmpFor(Directive):
    """`omp for`: the threads of the region around share the next loop."""

    schedule: Schedule = Schedule()
    reductions: tuple[Reduction, ...] = ()

    def __post_init__(self):
        _typed(self.schedule, Schedule, "a loop schedule")
        _reductions(self.reductions)


@dataclass(frozen=True, slots=True)
class OmpSimd(Directive):
    reductions: tuple[Reduction, ...] = ()

    def __post_init__(self):
        _reductions(self.reductions)


@dataclass(frozen=True, slots=True)
class OmpAtomic(Directive):
    """`omp atomic` (an update), or `omp atomic read`/`write`."""

    kind: str = ""

    def __post_init__(self):
        _one_of(self.kind, ("", "read", "write"), "an atomic access")


@dataclass(frozen=True, slots=True)
class OmpBarrier(Directive):
    pass


@dataclass(frozen=True, slots=True)
class OmpSingle(Directive):
    pass


@dataclass(frozen=True, slots=True)
class OmpCritical(Directive):
    pass


# --- top level ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    type: CType
    name: str

    def __post_init__(self):
        _set(self, "type", ctype(self.type))
        identifier(self.name)


STORAGE_CLASSES = frozenset({"", "static", "static inline"})


@dataclass(frozen=True, slots=True)
class Function:
    """A function definition; `static inline` for the helpers a kernel defines before itself."""

    return_type: CType
    name: str
    params: tuple[Param, ...]
    body: Block
    storage: str = ""

    def __post_init__(self):
        _set(self, "return_type", ctype(self.return_type))
        identifier(self.name)
        _one_of(self.storage, STORAGE_CLASSES, "a storage class")


@dataclass(frozen=True, slots=True)
class Prelude:
    """A section of codegen's C prelude (`prelude.c`), its `${placeholders}` filled from `values`."""

    section: str
    values: tuple[tuple[str, "str | int | CType"], ...] = ()

    def __post_init__(self):
        identifier(self.section)
        for placeholder, value in self.values:
            identifier(placeholder)
            if isinstance(value, str):
                identifier(value)
            elif isinstance(value, bool) or not isinstance(value, (int, CType)):
                raise ValueError(f"Expected a name, an integer or a C type for ${{{placeholder}}}, but found {value!r}")


@dataclass(frozen=True, slots=True)
class Include:
    header: str

    def __post_init__(self):
        if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*(/[A-Za-z_][A-Za-z_0-9]*)*\.h", self.header) is None:
            raise ValueError(f"Expected a system header's path, but found {self.header!r}")


@dataclass(frozen=True, slots=True)
class Define:
    name: str
    why: str = ""

    def __post_init__(self):
        identifier(self.name)
        _comment(self.why)


TopLevel = Union[Function, Prelude, Include, Define]


@dataclass(frozen=True, slots=True)
class Unit:
    """A translation unit: what one kernel's source holds."""

    items: tuple[TopLevel, ...]
