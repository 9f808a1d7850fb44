"""Checks of a hand-written CIN statement before it is lowered: every index bound by exactly one loop
around its uses, every loop used, and the statement computing the expression it is compiled for.

`meaning(stmt)` inlines every temporary into its consumer (and sums the statements of a sequence that
write one tensor), giving back the index-notation assignment the statement computes.
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..notation import ast as notation
from ..notation.ast import IndexVar
from ..notation.scope import sums_normalised
from .ast import Access, Assign, Forall, Stmt, Where, accesses, all_accesses
from .provenance import Provenance, split_relations
from .rewrite import postwalk, rebuild_expr


def check_bindings(stmt: Stmt, bound: tuple[IndexVar, ...] = (), provenance: Provenance = Provenance()) -> None:
    """Raise ScheduleError for an index used outside a loop over it, a loop nested in a loop over the
    same index, or a loop over an index nothing inside it uses. A loop over a derived variable binds
    the indices it came from once the loops over all their derived variables are around a use."""
    if isinstance(stmt, Forall):
        if stmt.index in bound:
            raise ScheduleError(f"Expected each index bound once, but ∀{stmt.index} is nested in a loop over "
                                f"{stmt.index} in {stmt}")
        used = {i for a in all_accesses(stmt.body) for i in a.indices}
        if not set(provenance.roots(stmt.index)) & used:
            raise ScheduleError(f"Expected the loop ∀{stmt.index} to be used, but no access inside it has "
                                f"{stmt.index}: {stmt}")
        check_bindings(stmt.body, (*bound, stmt.index), provenance)
    elif isinstance(stmt, Assign):
        for access in (stmt.lhs, *accesses(stmt.rhs)):
            free = [i for i in access.indices if not set(provenance.leaves(i)) <= set(bound)]
            if free:
                raise ScheduleError(f"Expected a loop over {free[0]} around {stmt}, but none binds it")
    else:
        for child in stmt.children():
            check_bindings(child, bound, provenance)


def meaning(stmt: Stmt, provenance: Provenance = Provenance()) -> notation.Assignment:
    """The assignment `stmt` computes, temporaries inlined, every reduction an explicit `Sum` over the
    expression its loops enclose (a producer's loops sum only what that producer writes)."""
    definitions = _definitions(stmt, {}, (), provenance)
    results = [name for name, (lhs, _) in definitions.items() if not lhs.tensor.temporary]
    if len(results) != 1:
        raise ScheduleError(f"Expected a statement computing one result, but {stmt} writes {sorted(results) or 'none'}")
    lhs, rhs = definitions[results[0]]
    return notation.Assignment(_plain(lhs), _inline(rhs, definitions))


def _definitions(stmt: Stmt, found: dict, loops: tuple[IndexVar, ...], provenance: Provenance) -> dict:
    """tensor name -> (lhs access, right-hand side summed over the statements that write it), each summed
    over the indices of the `loops` around it (since the producer it is in began) that it does not write."""
    if isinstance(stmt, Assign):
        name = stmt.lhs.tensor.name
        rhs = _reduced(stmt.reduce, [i for i in dict.fromkeys(r for loop in loops for r in provenance.roots(loop))
                                     if i not in stmt.lhs.indices], stmt.rhs)
        if name in found:
            lhs, earlier = found[name]
            if lhs.indices != stmt.lhs.indices or not stmt.accumulate or stmt.reduce != "add":
                raise ScheduleError(f"Expected later writes of {name} to add to it with the same indices, but "
                                    f"found {stmt}")
            found[name] = (lhs, notation.Add(earlier, rhs))
        else:
            found[name] = (stmt.lhs, rhs)
    elif isinstance(stmt, Forall):
        _definitions(stmt.body, found, (*loops, stmt.index), provenance)
    elif isinstance(stmt, Where):
        _definitions(stmt.producer, found, (), provenance)
        _definitions(stmt.consumer, found, loops, provenance)
    else:
        for child in stmt.children():
            _definitions(child, found, loops, provenance)
    return found


def _reduced(reduce: str, indices: list[IndexVar], expr):
    """`expr` reduced over each of `indices` (the first outermost) by the operator `reduce`: `Sum`s for add."""
    if reduce == "add":
        return notation.summed(indices, expr)
    for index in reversed(indices):
        expr = notation.Reduce(reduce, index, expr)
    return expr


def _inline(expr, definitions: dict):
    def leaf(access: Access):
        if not access.tensor.temporary:
            return _plain(access)
        lhs, rhs = definitions[access.tensor.name]
        renaming = dict(zip(lhs.indices, access.indices))
        return rebuild_expr(_inline(rhs, definitions), lambda a: _rename(a, renaming))
    return rebuild_expr(expr, leaf)


def _plain(access: Access) -> notation.Access:
    return notation.Access(access.tensor.name, access.indices)


def _rename(access: notation.Access, renaming: dict) -> notation.Access:
    return notation.Access(access.tensor, tuple(renaming.get(i, i) for i in access.indices))


def check_computes(stmt: Stmt, assignment: notation.Assignment) -> None:
    """Raise ScheduleError unless `stmt` computes `assignment` (the same accesses, in the same expression up
    to the order of factors and terms, which scheduling may change; a `+=` of reductions is the `=` of the
    notation)."""
    stmt, relations = split_relations(stmt)
    check_bindings(stmt, provenance=Provenance(relations))
    computed = meaning(stmt, Provenance(relations))
    whole = notation.summed(assignment.reduction_indices, assignment.rhs)  # the implicit sums made explicit
    if (computed.lhs, _canonical(computed.rhs)) != (assignment.lhs, _canonical(whole)):
        raise ScheduleError(f"Expected a schedule computing {assignment}, but the statement {stmt} computes "
                            f"{computed.lhs} = {computed.rhs}")


#: Products of sums are multiplied out for the comparison only up to this many terms (an autoscheduler
#: distributes small expressions; a larger one is compared as written).
EXPANDED_TERMS = 64


def _canonical(expr) -> str:
    """The text of `expr` with each `a - b` written `a + -b` and products multiplied out over sums (as
    the asymptotic autoscheduler's rewrites spell them), its sums normalised (`scope.sums_normalised`),
    then the operands of each chain of products, of each chain of sums, and the indices of directly
    nested sums sorted."""
    expr = _negated(expr)
    terms = _terms(expr)
    if terms is not None:
        expr = terms[0]
        for term in terms[1:]:
            expr = notation.Add(expr, term)
    return _sorted_text(sums_normalised(expr))


def _negated(expr):
    """`expr` with every `a - b` written `a + -b`."""
    return postwalk(expr, lambda e: notation.Add(e.left, notation.Neg(e.right)) if isinstance(e, notation.Sub) else e)


def _terms(expr) -> list | None:
    """The terms of `expr` (without `Sub`) multiplied out, or None past EXPANDED_TERMS."""
    if isinstance(expr, notation.Add):
        left, right = _terms(expr.left), _terms(expr.right)
        found = None if left is None or right is None else left + right
    elif isinstance(expr, notation.Mul):
        left, right = _terms(expr.left), _terms(expr.right)
        found = None if left is None or right is None else [notation.Mul(a, b) for a in left for b in right]
    elif isinstance(expr, (notation.Neg, notation.Sum)):
        inner = _terms(expr.children()[0])
        found = None if inner is None else [expr.with_children((term,)) for term in inner]
    else:
        found = [expr]
    return found if found is None or len(found) <= EXPANDED_TERMS else None


def _sorted_text(expr) -> str:
    if isinstance(expr, notation.Sum):
        indices, body = notation.peeled(expr)
        return f"∑{','.join(sorted(map(str, indices)))}({_sorted_text(body)})"
    if isinstance(expr, (notation.Mul, notation.Add)):
        kind = type(expr)
        operands, stack = [], [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, kind):
                stack += [node.left, node.right]
            else:
                operands.append(_sorted_text(node))
        return "(" + (" * " if kind is notation.Mul else " + ").join(sorted(operands)) + ")"
    if isinstance(expr, notation.Neg):
        return f"(-{_sorted_text(expr.operand)})"
    return str(expr)
