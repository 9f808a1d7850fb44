"""precompute(expr, i, iw[, format]): expr into a temporary indexed by iw, read at i by the rest of the
statement (Kjolstad et al. 2019)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...cin.ast import (Assign, Forall, Sequence, Stmt, TensorVar, Where, accesses, assignments, default_access, nest,
                        tensors)
from ...cin.provenance import Provenance
from ...cin.rewrite import rebuild_expr
from ...errors import ScheduleError
from ...format import Capability
from ...format.spec import as_format
from ...notation.ast import Expr, IndexVar, factors, product
from .base import Arity, Command, Derived, Relations, ScheduleCommand, command, read_index, read_name
from .rewrite import as_cin, failure, replace_node


@command
@dataclass(frozen=True)
class Precompute(ScheduleCommand):
    """Compute `expr` (a factor of a product, or the whole right-hand side) into a temporary w over
    `workspace_index` that the rest of the statement reads at `index`:

        ∀i ∀k ∀j C(i,j) += A(i,k) * B(k,j)      precompute(A(i,k) * B(k,j), j, j)
        ∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))

    The `where` goes above the outermost loop, among those around the statement, over `index` or over an
    index that only `expr` uses (a reduction inside it, k above), or over variables split from one:
    the producer runs those loops of `expr`, and the consumer keeps the loops of the rest. `fmt` is the
    temporary's format (dense by default; "h" for hashed). Every other index of `expr` the result keeps
    must be fixed by the loops around the `where` (all the loops derived from it)."""

    name: ClassVar[str] = "precompute"
    arity: ClassVar[Arity] = Arity(3, 4)
    expr: Expr
    index: IndexVar
    workspace_index: IndexVar
    fmt: str | None = None

    def __str__(self) -> str:
        fmt = [self.fmt] if self.fmt is not None else []
        return f"{self.name}({', '.join(map(str, [self.expr, self.index, self.workspace_index, *fmt]))})"

    @classmethod
    def read(cls, written: Command) -> "Precompute":
        args = written.args
        fmt = read_name(args[3], written) if len(args) > 3 else None
        return cls(args[0], read_index(args[1], written), read_index(args[2], written), fmt)

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        command = f"precompute({self.expr}, {self.index}, {self.workspace_index})"
        expr = as_cin(self.expr, stmt, command)
        at = self._placement(stmt, expr, Provenance(relations), command)
        workspace = _temporary(stmt, self.fmt, command)
        rename = {self.index: self.workspace_index}
        producer_loops = tuple(replace(loop, index=rename.get(loop.index, loop.index)) for loop in at.inner
                               if at.roots[loop.index] <= at.own)
        write = default_access(workspace, (self.workspace_index,), write=True)
        producer = nest(producer_loops, Assign(write, _rename(expr, rename), accumulate=bool(at.reductions)))
        consumer_loops = tuple(loop for loop in at.inner if not at.roots[loop.index] & at.reductions)
        read = default_access(workspace, (self.index,), write=False)
        rhs = product([*at.rest, read]) if at.rest else read
        enclosing = set().union(*(at.roots[loop.index] for loop in (*at.outer, *consumer_loops)))
        accumulate = at.target.accumulate and not enclosing <= set(at.target.lhs.indices)
        consumer = nest(consumer_loops, Assign(at.target.lhs, rhs, accumulate=accumulate))
        return replace_node(stmt, at.inner[0], Where(consumer, producer)), relations

    def _placement(self, stmt: Stmt, expr, provenance: Provenance, command: str) -> "_Placement":
        """Where the `where` goes, with the preconditions checked."""
        index = self.index
        target = next((a for a in assignments(stmt) if _rest(a.rhs, expr) is not None), None)
        if target is None:
            raise ScheduleError(f"{command}: no statement computes {expr} (as a factor of a product, or its whole "
                                f"right-hand side)")
        chain = _enclosing_chain(stmt, target)
        if index not in [loop.index for loop in chain]:
            raise failure(self.name, index, f"the statement computing {expr} is not inside a loop over {index}")
        own = _indices(expr)
        if index not in own:
            raise failure(self.name, index, f"{expr} does not vary with {index}")
        rest = _rest(target.rhs, expr)
        kept = set(target.lhs.indices) | (set().union(*(_indices(r) for r in rest)) if rest else set())
        reductions = {i for i in own if i not in kept and i != index}
        # a loop over variables split or fused from indices stands for those indices (its roots)
        roots = {loop.index: set(provenance.roots(loop.index)) for loop in chain}
        at = min(n for n, loop in enumerate(chain) if roots[loop.index] & (reductions | {index}))
        outer, inner = chain[:at], chain[at:]
        mixed = [loop.index for loop in inner if roots[loop.index] & reductions and not roots[loop.index] <= own]
        if mixed:
            raise failure(self.name, index, f"the loop over {mixed[0]} runs over "
                                            f"{', '.join(map(str, roots[mixed[0]]))} at once, which the temporary's "
                                            f"producer and its consumer would share")
        around = {loop.index for loop in outer}
        escaped = sorted(str(i) for i in own if i != index and i in kept and not set(provenance.leaves(i)) <= around)
        if escaped:
            raise failure(self.name, index, f"{expr} also varies with {', '.join(escaped)}, which the result keeps "
                                            f"but no loop around the temporary fixes: a temporary over {index} alone "
                                            f"would sum it away")
        if any(loop.parallel for loop in inner):
            raise failure(self.name, index, "no command may follow parallelize on the loops it moves")
        return _Placement(target, tuple(rest), frozenset(own), frozenset(reductions), roots, outer, inner)


@dataclass(frozen=True)
class _Placement:
    """Where precompute puts its `where`: around the `inner` loops of the statement `target` (whose
    factors other than the precomputed ones are `rest`), below the `outer` ones."""

    target: Assign
    rest: tuple
    own: frozenset[IndexVar]  # the precomputed expression's indices
    reductions: frozenset[IndexVar]  # those only it uses, summed by the producer
    roots: dict[IndexVar, set[IndexVar]]  # each loop's index variables as the tensors see them
    outer: tuple[Forall, ...]
    inner: tuple[Forall, ...]


def _rest(rhs, expr) -> list | None:
    """The factors of `rhs` left when those of `expr` are taken out ([] when `expr` is all of it), or None
    when `expr` is neither `rhs` nor a sub-product of it."""
    if rhs == expr:
        return []
    left = list(factors(rhs))
    for factor in factors(expr):
        if factor not in left:
            return None
        left.remove(factor)
    return left if len(factors(expr)) > 1 else None


def _indices(expr) -> set[IndexVar]:
    return {i for a in accesses(expr) for i in a.indices}


def _enclosing_chain(stmt: Stmt, target: Assign) -> tuple[Forall, ...]:
    """The foralls directly around `target`, outermost first (stopping at a where or sequence)."""
    def search(node, chain):
        if node is target:
            return chain
        if isinstance(node, Forall):
            return search(node.body, (*chain, node))
        if isinstance(node, (Where, Sequence)):
            return next((found for child in node.children() if (found := search(child, ())) is not None), None)
        return None
    return search(stmt, ())


def _temporary(stmt: Stmt, fmt, command: str) -> TensorVar:
    taken = set(tensors(stmt))
    name = next(n for n in (f"w{k or ''}" for k in range(len(taken) + 1)) if n not in taken)
    try:
        chosen = as_format(fmt or "d", 1)
    except Exception as error:
        raise ScheduleError(f"{command}: the temporary's format {fmt!r} is not one of order 1: {error}") from None
    if not all(Capability.INSERT in level.capabilities for level in chosen.levels):
        raise ScheduleError(f"{command}: a temporary is dense or hashed, not {chosen}")
    return TensorVar(name, chosen, temporary=True)


def _rename(expr, rename: dict[IndexVar, IndexVar]):
    return rebuild_expr(expr, lambda a: replace(a, indices=tuple(rename.get(i, i) for i in a.indices)))
