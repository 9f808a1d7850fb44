"""Where each reduction sums: TACO's rule, made explicit with `Sum` nodes.

A reduction index is summed over the smallest subexpression that holds all its uses: a product whose
factors use it is summed whole, a sum is summed term by term (over only the terms that use it), and a
negation or a product with a single factor using it passes the sum on to that factor only when the
factor is a sum some of whose terms do not use it. So `A(i,j) * x(j) + z(i)` sums j over the product
alone, `c(i) * (a(i) + B(i,j))` over B alone, and `B(i,k,l) * C(k,j) * D(l,j)` over everything. A sum never
crosses a function or another reduction, which are not linear: it goes inside the one argument that uses
its index (`maximum(A(i,j) * x(j), 0)` is `maximum(sum(j, A(i,j) * x(j)), 0)`), or sums the function whole
when several do; inside `min(j, ...)` it stays in the body.

A reduction placed at the root stays implicit (the `Assignment` sums it over the whole right-hand side,
the form concretize, the autoschedulers and distribution schedule directly); one placed lower becomes
a `Sum` node. `sums_normalised` is the canonical form used to compare two scoped expressions.
"""

from __future__ import annotations

from .ast import (Add, Apply, Assignment, Div, Expr, IndexVar, Mul, Neg, Reduce, Sub, Sum, factors, peeled, product,
                  summed, unbound_indices)

Path = tuple[int, ...]


def scope_reductions(assignment: Assignment) -> Assignment:
    """`assignment` with every implicit reduction whose scope is not the whole right-hand side moved
    into a `Sum` at its scope, and sums over the whole right-hand side made implicit."""
    whole, rhs = peeled(assignment.rhs)
    wraps: dict[Path, list[IndexVar]] = {}
    for index in unbound_indices(rhs):
        if index in assignment.lhs.indices or index in whole:
            continue
        paths = _placement(rhs, (), index)
        if paths != [()]:
            for path in paths:
                wraps.setdefault(path, []).append(index)
    rhs = _wrapped(rhs, (), wraps)
    return Assignment(assignment.lhs, rhs, assignment.accumulate)


def implicit_text(assignment: Assignment) -> str:
    """The right-hand side as text that parses back to it: the implicit reductions that the scoping rule
    would place lower than the whole right-hand side are written as `sum(...)` around it."""
    text = str(assignment.rhs)
    for index in reversed(assignment.reduction_indices):
        if _placement(assignment.rhs, (), index) != [()]:
            text = f"sum({index}, {text})"
    return text


def _uses(expr: Expr, index: IndexVar) -> bool:
    return index in unbound_indices(expr)


def _chain(expr: Expr, path: Path, kinds: tuple[type, ...]) -> list[tuple[Expr, Path]]:
    """The operands of the maximal chain of `kinds` nodes rooted at `expr` (terms of a sum, factors of a
    product), with their paths."""
    if not isinstance(expr, kinds):
        return [(expr, path)]
    return _chain(expr.left, path + (0,), kinds) + _chain(expr.right, path + (1,), kinds)


def _placement(expr: Expr, path: Path, index: IndexVar) -> list[Path]:
    """The paths of the nodes `index` is summed over within `expr` (at `path`), which uses it."""
    if isinstance(expr, (Add, Sub)):
        terms = [(t, p) for t, p in _chain(expr, path, (Add, Sub)) if _uses(t, index)]
        if len(terms) == len(_chain(expr, path, (Add, Sub))):
            return [path]
        return [found for term, p in terms for found in _placement(term, p, index)]
    if isinstance(expr, Mul):
        users = [(f, p) for f, p in _chain(expr, path, (Mul,)) if _uses(f, index)]
        return [path] if len(users) > 1 else _passed_on(path, *users[0], index)
    if isinstance(expr, Div):
        return _divided(expr, path, index)
    if isinstance(expr, (Neg, Sum)):
        return _passed_on(path, expr.children()[0], path + (0,), index)
    if isinstance(expr, (Apply, Reduce)):
        return _inside(expr, path, index)
    return [path]


def _inside(expr: "Apply | Reduce", path: Path, index: IndexVar) -> list[Path]:
    """A function or a non-sum reduction is not linear: the sum stays inside the one child that uses the
    index (even where that child would be summed whole), and sums the node only when several do."""
    users = [(child, path + (n,)) for n, child in enumerate(expr.children()) if _uses(child, index)]
    return _placement(*users[0], index) if len(users) == 1 else [path]


def _divided(expr: Div, path: Path, index: IndexVar) -> list[Path]:
    """A quotient is summed whole when both sides use the index, or the dividend alone does (Σ a / b is
    (Σ a) / b); a sum in the divisor stays inside it, since a / Σ b is not Σ (a / b)."""
    if not _uses(expr.left, index):
        return _placement(expr.right, path + (1,), index)
    if _uses(expr.right, index):
        return [path]
    return _passed_on(path, expr.left, path + (0,), index)


def _passed_on(path: Path, child: Expr, child_path: Path, index: IndexVar) -> list[Path]:
    """A node whose one used child carries the sum: the node itself, unless the child places it lower."""
    inner = _placement(child, child_path, index)
    return [path] if inner == [child_path] else inner


def _wrapped(expr: Expr, path: Path, wraps: dict[Path, list[IndexVar]]) -> Expr:
    children = tuple(_wrapped(child, path + (n,), wraps) for n, child in enumerate(expr.children()))
    return summed(wraps.get(path, ()), expr.with_children(children) if children else expr)


# --- canonical form ----------------------------------------------------------------------------------

def sums_normalised(expr: Expr) -> Expr:
    """`expr` with its sums in one canonical place, so two scoped expressions mean the same reductions
    when their normal forms are equal up to the order of terms, factors and directly nested sums: a sum
    is distributed over the terms of a sum it encloses, and drawn out of the factors of a product and
    out of a negation (when no two factors bind or use one name)."""
    if isinstance(expr, Sum):
        return _distributed(expr.index, sums_normalised(expr.body))
    children = tuple(sums_normalised(child) for child in expr.children())
    expr = expr.with_children(children) if children else expr
    if isinstance(expr, Neg):
        indices, inner = peeled(expr.operand)
        return summed(indices, Neg(inner))
    if isinstance(expr, Mul):
        return _drawn_out(factors(expr))
    return expr


def _distributed(index: IndexVar, expr: Expr) -> Expr:
    if isinstance(expr, (Add, Sub)):
        return type(expr)(_distributed(index, expr.left), _distributed(index, expr.right))
    return Sum(index, expr)


def _drawn_out(operands: list[Expr]) -> Expr:
    parts = [peeled(f) for f in operands]
    bound = [i for indices, _ in parts for i in indices]
    if len(set(bound)) < len(bound) or set(bound) & {i for f in operands for i in unbound_indices(f)}:
        return product(operands)
    return summed(bound, product([inner for _, inner in parts]))
