"""Stages 1–5 of the enumeration (Ahrens et al. §7.1–7.5): from one assignment to the loop nests of
minimum depth, with workspaces named and indexed — everything but protocols.

1. rewrites: expressions flattened modulo associativity and commutativity (n-ary `*` and `+`), plus
   the distributed forms of products over sums;
2. where-groupings: any set of disjoint groups of two or more operands of an n-ary node (short of the
   whole node) becomes a workspace computed by a `where` producer; a product's workspace may reduce
   (`w += …`, since + distributes over *) or not (`w = …`), a sum's never reduces; a scoped sum
   (`sum(j, …)`, a reduction over part of the right-hand side) is always a reducing workspace over
   exactly its body;
3. forall nestings: every index starts outermost and any of them may sink into a where — into each side
   that uses it when the producer reduces, else into the consumer and into the producer when it uses it —
   then all orders of each block of contiguous loops; an index a scoped sum sums must sink until it is
   inside that sum's producer (it never loops around anything the sum does not hold);
4. only the nests of minimum maximum depth among the valid ones (every access bound by loops around it,
   see `bound_everywhere`) survive, decided before orders are expanded (neither depends on them);
5. a workspace is indexed by the loops inside both its producer and its consumer, in the consumer's
   loop order; workspaces get names in program order, so equal programs are equal sketches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations, count, permutations, product
from math import factorial
from types import MappingProxyType
from typing import Iterator, Mapping

from ...notation import ast as notation
from ...cin.ast import Assign, Forall, Where, assignments, nest
from ..algebra import PLUS_TIMES, Semiring
from .sketch import Access, Call, Stmt, Sum, from_expression, reads

_PENDING = "~"  # the name prefix of a workspace whose indices are not known yet
_UNSCOPED: Mapping[str, frozenset[str]] = MappingProxyType({})  # no scoped sums


# --- stage 1: expression rewrites --------------------------------------------------------------------


def flatten(expr: notation.Expr, semiring: Semiring = PLUS_TIMES):
    """Index notation -> a sketch expression with n-ary `*`/`+` (the semiring's ⊗ and ⊕) in a canonical
    argument order."""
    return from_expression(expr, lambda a: Access(a.tensor, tuple(i.name for i in a.indices)), _nary, semiring)


def _nary(op: str, args) -> Call:
    flat = []
    for arg in args:
        flat.extend(arg.args if isinstance(arg, Call) and arg.op == op else (arg,))
    return Call(op, tuple(sorted(flat, key=str)))


def rewrites(expr, distributes: bool = True) -> list:
    """`expr` and every form reached by distributing products over sums, each once; `expr` alone where
    the semiring's ⊗ does not distribute over its ⊕ (algebra.py: max-times)."""
    seen = {expr: None}
    frontier = [expr] if distributes else []
    while frontier:
        for form in _distributed_once(frontier.pop()):
            if form not in seen:
                seen[form] = None
                frontier.append(form)
    return list(seen)


def _distributed_once(expr) -> Iterator:
    if isinstance(expr, Sum):
        for form in _distributed_once(expr.body):
            yield Sum(expr.indices, form)
        return
    if not isinstance(expr, Call):
        return
    if expr.op == "*":
        for n, arg in enumerate(expr.args):
            if isinstance(arg, Call) and arg.op == "+":
                rest = expr.args[:n] + expr.args[n + 1:]
                yield _nary("+", tuple(_nary("*", (term, *rest)) for term in arg.args))
    for n, arg in enumerate(expr.args):
        for form in _distributed_once(arg):
            yield _nary(expr.op, expr.args[:n] + (form,) + expr.args[n + 1:]) if len(expr.args) > 1 \
                else Call(expr.op, (form,))


# --- stage 2: where groupings ------------------------------------------------------------------------


@dataclass
class Pending:
    """Names for workspaces whose indices are not known yet (`~0`, `~1`, … unique across all of stage 2),
    and for each scoped sum's workspace the indices it sums (`scopes`), which stage 3 keeps inside it.
    `distributes`: whether ⊗ distributes over ⊕, so that a workspace of some factors may reduce (move the
    reduction past the other factors). `grouped`: whether some operands of a node may be computed into a
    workspace of their own (which starts at ⊕'s identity, so that must be their absent value: the
    semiring's zero, the fill of every sparse operand; a reduction's workspace is always allowed)."""

    distributes: bool = True
    grouped: bool = True
    numbers: Iterator[int] = field(default_factory=count)
    scopes: dict[str, frozenset[str]] = field(default_factory=dict)

    def fresh(self, summed: tuple[str, ...] = ()) -> str:
        name = f"{_PENDING}{next(self.numbers)}"
        if summed:
            self.scopes[name] = frozenset(summed)
        return name


def groupings(lhs: Access, expr, reduce: bool, distributes: bool = True,
              grouped: bool = True) -> tuple[list[Stmt], Mapping[str, frozenset[str]]]:
    """Where-nests without loops, and the indices each scoped sum's pending workspace sums. A pending
    workspace is written as a scalar `~n`; its producer's `+=` marks a reducing producer (what stage 3
    needs), settled in stage 5 once indices are known. `distributes`, `grouped`: as `Pending`'s."""
    names = Pending(distributes, grouped)
    found = []
    for form in rewrites(expr, distributes):
        for consumer, producers in _grouped(form, names):
            stmt: Stmt = Assign(lhs, consumer, reduce)
            for producer in producers:
                stmt = Where(stmt, producer)
            found.append(stmt)
    return found, names.scopes


def _grouped(expr, names: Pending) -> list[tuple]:
    """(expression reading workspaces, producer statements) for every grouping of `expr`."""
    if isinstance(expr, Sum):
        return [_workspace(body, producers, names.fresh(expr.indices), True)
                for body, producers in _grouped(expr.body, names)]
    if not isinstance(expr, Call):
        return [(expr, ())]
    if len(expr.args) == 1:  # a negation or a unary function
        return [(Call(expr.op, (inner,)), producers) for inner, producers in _grouped(expr.args[0], names)]
    args = expr.args
    per_arg = [_grouped(a, names) for a in args]
    results = []
    for groups in _disjoint_groups(len(args)) if names.grouped else [()]:
        grouped = set().union(*groups) if groups else set()
        free = [per_arg[n] for n in range(len(args)) if n not in grouped]
        computed = [_workspaces(expr.op, tuple(args[n] for n in group), names) for group in groups]
        for picks in product(*free, *computed):
            operands = [operand for operand, _ in picks]
            producers = tuple(p for _, ps in picks for p in ps)
            results.append((_nary(expr.op, operands) if len(operands) > 1 else operands[0], producers))
    return results


def _workspaces(op: str, operands: tuple, names: Pending) -> list[tuple]:
    """Every way to compute `op(operands)` into a fresh workspace: (its read, (its producer,))."""
    return [_workspace(body, producers, names.fresh(), reduces)
            for body, producers in _grouped(_nary(op, operands), names)
            for reduces in ((True, False) if op == "*" and names.distributes else (False,))]


def _workspace(body, producers: tuple, name: str, reduces: bool) -> tuple:
    """(the read of workspace `name`, (its producer: `name (+)= body` where `producers`,))."""
    stmt: Stmt = Assign(Access(name, ()), body, reduces)
    for producer in producers:
        stmt = Where(stmt, producer)
    return Access(name, ()), (stmt,)


def _disjoint_groups(n: int) -> list[tuple[tuple[int, ...], ...]]:
    """Collections of disjoint groups of at least two of n operands, none the whole node, each once."""
    found: list[tuple] = [()]

    def extend(groups: tuple, used: frozenset) -> None:
        for size in range(2, n):
            for group in combinations([k for k in range(n) if k not in used], size):
                if not groups or group > groups[-1]:
                    found.append((*groups, group))
                    extend((*groups, group), used | set(group))

    extend((), frozenset())
    return found


# --- stages 3 and 4: forall nestings, minimum depth ---------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Loops over `indices`, in an order stage 4 leaves open, around `body`."""

    indices: frozenset[str]
    body: "Block | Where | Assign"


def placements(stmt: Stmt, indices: frozenset[str], scopes: Mapping[str, frozenset[str]] = _UNSCOPED,
               inside: frozenset[str] = frozenset(), limit: int | None = None) -> list[tuple[Stmt, int]]:
    """Every placement of loops over `indices` into the where-nest `stmt` of maximum depth at most
    `limit` (any, if None), with its depth. An index a scoped sum sums (`scopes`: pending workspace →
    its indices) loops only inside that sum's producer: `inside` holds the summed indices whose
    producers enclose `stmt`. Stage 4 asks depth by depth: the nests of 4 factors at every depth are
    tens of thousands (TTMc: 36,273, 1.7 s), those of minimum depth a few hundred."""
    if isinstance(stmt, Assign):
        fits = limit is None or len(indices) <= limit
        return [(Block(indices, stmt), len(indices))] if fits and not indices & _outside(scopes, inside) else []
    found = []
    producer_scope = _producer_scope(stmt, scopes, inside)
    for stay, consumer_side, producer_side in _sinkings(stmt, indices, scopes, inside, limit):
        below = None if limit is None else limit - len(stay)
        for consumer, c_depth in placements(stmt.consumer, consumer_side, scopes, inside, below):
            for producer, p_depth in placements(stmt.producer, producer_side, scopes, producer_scope, below):
                found.append((Block(stay, Where(consumer, producer)), len(stay) + max(c_depth, p_depth)))
    return found


def nestings(stmts: list[Stmt], indices: frozenset[str], scopes: Mapping[str, frozenset[str]] = _UNSCOPED) -> int:
    """How many statements `placements` stands for at every depth (each block's loops in every order)
    over the where-nests `stmts`, counted without building them (their producers recur): stage 3's count."""
    memo: dict[tuple, int] = {}

    def count(node: Stmt, loops: frozenset[str], inside: frozenset[str]) -> int:
        key = (id(node), loops, inside)  # the nests hold every node while counting; hashing them is slow
        if key not in memo:
            memo[key] = _count(node, loops, inside)
        return memo[key]

    def _count(node: Stmt, loops: frozenset[str], inside: frozenset[str]) -> int:
        if isinstance(node, Assign):
            return 0 if loops & _outside(scopes, inside) else factorial(len(loops))
        return sum(factorial(len(stay)) * count(node.consumer, consumer_side, inside)
                   * count(node.producer, producer_side, _producer_scope(node, scopes, inside))
                   for stay, consumer_side, producer_side in _sinkings(node, loops, scopes, inside))

    return sum(count(stmt, indices, frozenset()) for stmt in stmts)


def _outside(scopes: Mapping[str, frozenset[str]], inside: frozenset[str]) -> frozenset[str]:
    """The summed indices that may not loop here (their scoped sums' producers do not enclose it)."""
    return frozenset().union(*scopes.values()) - inside


def _producer_scope(stmt: Where, scopes: Mapping[str, frozenset[str]], inside: frozenset[str]) -> frozenset[str]:
    return inside | scopes.get(_root(stmt.producer).lhs.tensor, frozenset())


def _sinkings(stmt: Where, indices: frozenset[str], scopes: Mapping[str, frozenset[str]], inside: frozenset[str],
              staying: int | None = None) -> Iterator[tuple[frozenset[str], frozenset[str], frozenset[str]]]:
    """Each way loops over `indices` split at a where with at most `staying` of them around it (any
    number if None): (those that stay around it, those that sink into its consumer, those that sink
    into its producer)."""
    outside = _outside(scopes, inside)
    reducing = _root(stmt.producer).accumulate
    used_consumer, used_producer = _used(stmt.consumer), _used(stmt.producer)
    ordered = sorted(indices)
    for size in range(0 if staying is None else max(0, len(ordered) - staying), len(ordered) + 1):
        for sunk in combinations(ordered, size):
            stay = indices - set(sunk)
            if not stay & outside:
                yield (stay, frozenset(i for i in sunk if i in used_consumer or not reducing),
                       frozenset(i for i in sunk if i in used_producer))


def _root(stmt) -> Assign:
    """The assignment a statement's result comes from: down loops and where consumers."""
    while not isinstance(stmt, Assign):
        stmt = stmt.consumer if isinstance(stmt, Where) else stmt.body
    return stmt


@lru_cache(maxsize=1 << 12)
def _used(stmt: Stmt) -> frozenset[str]:
    """Indices of the tensors (not the pending workspaces) read or written in `stmt`. Cached: stages 3
    and 4 split loops at the same few where-nests' sides tens of thousands of times (TTMc)."""
    return frozenset(i for assign in assignments(stmt) for access in (assign.lhs, *reads(assign.rhs))
                     if not access.tensor.startswith(_PENDING) for i in access.indices)


def orders(tree) -> Iterator[Stmt]:
    """Every statement a placement stands for: each block's loops in every order."""
    if isinstance(tree, Assign):
        yield tree
    elif isinstance(tree, Where):
        for consumer in orders(tree.consumer):
            for producer in orders(tree.producer):
                yield Where(consumer, producer)
    else:
        for body in orders(tree.body):
            for order in permutations(sorted(tree.indices)):
                yield nest(order, body)


# --- stage 5: name and index workspaces --------------------------------------------------------------


def named(stmt: Stmt, taken: set[str], result_reduces: bool,
          scopes: Mapping[str, frozenset[str]] = _UNSCOPED) -> tuple[Stmt, dict[str, tuple[str, ...]]]:
    """`stmt` with each pending workspace named (w0, w1, … in program order, avoiding `taken`) and
    indexed by the loops inside both its producer and its consumer, in the consumer's order (a loop
    over an index a scoped sum sums, inside that sum's producer, is that sum's own: two sums over `j`
    share no loop); every assignment reduces exactly when a loop in its tensor's scope is not one of
    its indices."""
    names = (name for name in (f"w{n}" for n in range(1 << 30)) if name not in taken)
    workspaces: dict[str, tuple[str, str, tuple[str, ...]]] = {}  # pending -> (name, indices)

    def visit(node: Stmt) -> None:
        if isinstance(node, Forall):
            visit(node.body)
        elif isinstance(node, Where):
            pending = _root(node.producer).lhs.tensor
            inner_producer = _loops(node.producer, scopes)
            shared = tuple(i for i in dict.fromkeys(_loops(node.consumer, scopes)) if i in inner_producer)
            workspaces[pending] = (next(names), shared)
            visit(node.consumer)
            visit(node.producer)

    visit(stmt)

    def rename(access: Access) -> Access:
        if access.tensor in workspaces:
            name, indices = workspaces[access.tensor]
            return Access(name, indices)
        return access

    result = _settled(stmt, rename, (), result_reduces)
    return result, {name: indices for name, indices in workspaces.values()}


def bound_everywhere(stmt: Stmt, loops: frozenset[str] = frozenset()) -> bool:
    """Every access's indices are bound by loops around it. Stage 3 decides where an index sinks from
    the tensors each side uses, but a pending workspace hides its indices: with four or more factors, a
    reduction can sink into one workspace's producer while another workspace read beside it is indexed
    by the same loop (`A += w1 * w0(m,n,j)` with `j` summed inside `w1`'s producer), which is no valid
    program of the expression."""
    if isinstance(stmt, Forall):
        return bound_everywhere(stmt.body, loops | {stmt.index})
    if isinstance(stmt, Where):
        return bound_everywhere(stmt.consumer, loops) and bound_everywhere(stmt.producer, loops)
    return all(set(a.indices) <= loops for a in (stmt.lhs, *reads(stmt.rhs)))


def _loops(stmt: Stmt, scopes: Mapping[str, frozenset[str]] = _UNSCOPED) -> list[str]:
    """The indices of the loops in `stmt`, but for those over a scoped sum's indices inside its producer."""
    if isinstance(stmt, Assign):
        return []
    if isinstance(stmt, Forall):
        return [stmt.index, *_loops(stmt.body, scopes)]
    private = scopes.get(_root(stmt.producer).lhs.tensor, frozenset())
    return [*_loops(stmt.consumer, scopes), *(i for i in _loops(stmt.producer, scopes) if i not in private)]


def _settled(stmt: Stmt, rename, scope: tuple[str, ...], reduces: bool) -> Stmt:
    """`stmt` with accesses renamed and `+=` set where a loop of the written tensor's scope is not one
    of its indices (the result's scope is the whole program; a workspace's starts at its where). One
    walk that builds plain nodes: stage 5 names every minimum-depth nest (TTMc: 2,568)."""
    if isinstance(stmt, Assign):
        lhs = rename(stmt.lhs)
        accumulate = reduces or any(i not in lhs.indices for i in scope)
        return Assign(lhs, _renamed(stmt.rhs, rename), accumulate)
    if isinstance(stmt, Forall):
        return Forall(stmt.index, _settled(stmt.body, rename, (*scope, stmt.index), reduces))
    return Where(_settled(stmt.consumer, rename, scope, reduces), _settled(stmt.producer, rename, (), False))


def _renamed(expr, rename):
    if isinstance(expr, Access):
        return rename(expr)
    if isinstance(expr, Call):
        return Call(expr.op, tuple(_renamed(arg, rename) for arg in expr.args))
    if isinstance(expr, Sum):
        return Sum(expr.indices, _renamed(expr.body, rename))
    return expr  # a literal
