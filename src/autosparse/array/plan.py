"""A lazy program's graph as assignments, each computed by one kernel (design31.md §3.2).

A node is inlined into its consumer — its assignment substituted for the access that reads it, its
indices renamed to the access's, its own reductions scoped (`sum(j, ...)`: TACO's meaning, docs/semantics.md)
— so `(A @ x + z) * 2` and an element-wise chain are one kernel each. A node is materialised (computed by
a kernel of its own, and read as an operand) when
1. `compute` asks for it, or it reduces and feeds several consumers (a kernel has one result; an
   element-wise node is recomputed in each instead);
2. it reduces, and materialising it belongs to the program with the fewest kernels on the frontier of its
   consumer's step: every subset of the step's reducing inputs materialised, each program costed by the
   asymptotic cost model of the default schedules (fusion.py; in a semiring's skeleton for min-plus and
   or-and). Inlined, `A @ (B @ x)` would compute `B @ x` again for every i: off the frontier. Where the
   model cannot cost the step (functions that keep no sparsity, divisions, two kinds of reduction), the
   syntactic rule stands in: materialise it when inlining would put its reduction under a loop over an
   index it does not use.

A step's sums that a reduced product multiplies by dense factors are taken around the product
(`_distributed`): a lazy MTTKRP is one product walking the tensor once, as einsum's is.

Every assignment names its operands T0, T1, ... in order of first appearance and its indices i, j, k, ...
(the result's first), so that a program run again on like operands (a solver's iterations) is the same
text, and every cache keyed by it (evaluate's kernels, the operators' warm calls) finds its kernel. Such a
program is not even planned again: a graph of the structure of one planned before (`_structure`: its nodes'
assignments, shapes, dtypes and fills, its leaves' kinds and which are one value) takes the kept steps, their
targets and operands mapped onto its own nodes by position.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations, count

import numpy as np

from ..api.arrays import NAMES, index_names
from ..notation import Access, Assignment, IndexVar, Reduce, Sum, walk
from ..notation.ast import REDUCING, Literal, Mul, peeled, summed
from ..tensor import Tensor
from .fusion import frontier


@dataclass(frozen=True)
class Step:
    """`target` computed by `expression` (text) of `operands`, named T0, T1, ... in it: leaves, or the
    targets of earlier steps."""

    target: object
    expression: str
    operands: tuple


#: The most reducing inputs of one step rule 2 decides over together (2ⁿ programs costed); beyond, the
#: syntactic rule decides.
CHOICES = 5

#: Plans kept, by the graph's structure (`_structure`), emptied when it holds this many.
KEPT = 256
_plans: dict = {}


def plan(roots) -> list[Step]:
    """The steps computing every root (lazy.Node) that is no leaf, each after the steps it reads: planned
    once per structure of the graph, then the steps' texts mapped onto the nodes of a graph like it."""
    nodes, key = _structure(roots)
    kept = _plans.get(key)
    if kept is None:
        if len(_plans) >= KEPT:
            _plans.clear()
        position = {node: k for k, node in enumerate(nodes)}
        steps = tuple((position[step.target], step.expression, tuple(map(position.get, step.operands)))
                      for step in _Planner(roots).steps)
        # the key names each node's assignment by its id: the plan holds them, so no other takes their ids
        kept = _plans[key] = steps, tuple(node.assignment for node in nodes)
    steps = kept[0]
    return [Step(nodes[target], text, tuple(nodes[k] for k in operands)) for target, text, operands in steps]


def _structure(roots) -> tuple[list, tuple]:
    """The nodes the roots need, inputs before their readers, and what the plan depends on: each node's
    assignment (its id: record makes a loop's nodes with one assignment per text, and hashing it deeply on
    every call would cost more than the rest), shape, dtype, fill and kept modes and its inputs' positions;
    each leaf's kind (a Tensor's format, index dtype and fill, a scipy matrix's format, a numpy array) and
    which leaves hold one value (the planner reads such leaves as one operand); and the roots' positions."""
    nodes: list = []
    position: dict = {}
    values: dict = {}
    signature: list = []
    at_roots = tuple([_visit(root, nodes, position, values, signature) for root in roots])
    return nodes, (tuple(signature), at_roots)


def _visit(node, nodes: list, position: dict, values: dict, signature: list) -> int:
    """`_structure`'s walk: `node`'s position, its inputs visited first. A function of module level, not a
    closure calling itself: that closure would be a reference cycle holding every node and leaf value of the
    graph (a solver's vectors) until the cyclic collector ran, and a CG loop's heap grew by a vector a call."""
    at = position.get(node)
    if at is None:
        if node.is_leaf:
            same = values.setdefault(id(node.value), len(values))
            signature.append((same, leaf_kind(node.value), node.shape, node.dtype, node.fill))
        else:
            inputs = tuple([_visit(child, nodes, position, values, signature) for child in node.inputs])
            signature.append((id(node.assignment), node.shape, node.dtype, node.fill, node.kept, inputs))
        at = position[node] = len(nodes)
        nodes.append(node)
    return at


def leaf_kind(value) -> tuple:
    """What the builders and the planner read of a leaf's value beyond its shape, dtype and fill: a Tensor's
    format and index dtype (its kind), a scipy matrix's format, or that it is a numpy array."""
    if type(value) is Tensor:
        return Tensor, value.kind
    return type(value), getattr(value, "format", None)


class _Planner:
    """Builds `steps`: each materialised node's assignment, its inputs inlined where the rule allows, after
    the steps of the nodes it reads."""

    def __init__(self, roots):
        self.steps: list[Step] = []
        self.materialised = {root for root in roots if not root.is_leaf}
        self.reduces: dict = {}
        self.consumers = Counter()
        self._count(roots)
        self.materialised |= {node for node, n in self.consumers.items() if n > 1 and self._reduces(node)}
        self.done: set = set()
        self.fresh = count()
        for root in roots:
            self._materialise(root)

    def _count(self, roots) -> None:
        """How many times each node is read, by the nodes the roots need."""
        seen, stack = set(), list(roots)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            self.consumers.update(node.inputs)
            stack.extend(node.inputs)

    def _reduces(self, node) -> bool:
        """Whether computing `node` inlined would reduce (its own assignment or an inlined input's)."""
        if node not in self.reduces:
            own = node.assignment is not None and (node.assignment.reduction_indices or node.assignment.scoped)
            self.reduces[node] = bool(own) or any(self._reduces(i) for i in node.inputs if not i.is_leaf)
        return self.reduces[node]

    def _materialise(self, node) -> None:
        """Appends `node`'s step: built with every input inlined that rule 1 allows, then again with the reducing
        inputs rule 2 materialises — the fewest kernels on the frontier of the step's programs (fusion.py), or,
        where the model cannot cost them, by the syntactic rule, the outermost first."""
        if node.is_leaf or node in self.done:
            return
        self.done.add(node)
        lhs = tuple(self._index() for _ in node.shape)
        rhs, operands, inlined = self._built(node, lhs)
        chosen = self._chosen(Access("C", lhs), rhs, inlined, operands)
        if chosen is None:
            while (record := next((r for r in inlined if r.unused_loops), None)) is not None:
                self.materialised.add(record.node)
                rhs, operands, inlined = self._built(node, lhs)
        elif chosen:
            self.materialised |= chosen
            rhs, operands, inlined = self._built(node, lhs)
        dense = {name for name, child in operands.values() if child.is_leaf and child.fill == 0 and (
                 isinstance(child.value, np.ndarray) or isinstance(child.value, Tensor) and child.value.format.is_dense)}
        self.steps.append(_canonical(node, Access("C", lhs), _distributed(rhs, dense), operands))

    def _built(self, node, lhs: tuple):
        """`node`'s expression at `lhs`, its operands and the reducing inputs inlined in it (`_inlined`)."""
        operands: dict = {}
        inlined: list[_Inlined] = []
        return self._inlined(node, lhs, frozenset(lhs), operands, inlined), operands, inlined

    def _chosen(self, lhs: Access, rhs, inlined: list[_Inlined], operands: dict) -> set | None:
        """Rule 2: the nodes of `inlined` to materialise, of the program with the fewest kernels on the
        frontier of every subset of them materialised (the outermost first among equals); None where the model
        cannot cost them, or there are more than CHOICES."""
        if not inlined or len(inlined) > CHOICES:
            return None if inlined else set()
        subsets = [subset for size in range(len(inlined) + 1) for subset in combinations(inlined, size)]
        values = {name: (node.value if node.is_leaf else None, len(node.shape)) for name, node in operands.values()}
        kept = frontier([_split(lhs, rhs, subset) for subset in subsets], values)
        return None if kept is None else {record.node for record in subsets[kept[0]]}

    def _index(self) -> IndexVar:
        return IndexVar(f"x{next(self.fresh)}")

    def _inlined(self, node, indices: tuple, scope: frozenset, operands: dict, inlined: list):
        """`node`'s expression at `indices` under loops over `scope`: an Expr over placeholder operand
        names, `operands` keeping each one's name and node, `inlined` each reducing input inlined."""
        assignment = node.assignment
        renamed = dict(zip(assignment.lhs.indices, indices))
        for n in walk(assignment.rhs):
            for index in _bound_or_used(n):
                renamed.setdefault(index, self._index())
        inner = scope | frozenset(renamed.values())

        def access(a: Access):
            child = node.inputs[NAMES.index(a.tensor)]
            at = tuple(renamed[index] for index in a.indices)
            if not (child.is_leaf or child in self.materialised):
                if not self._reduces(child):
                    return self._inlined(child, at, inner, operands, inlined)
                record = _Inlined(child, at, not inner <= set(at))
                inlined.append(record)
                record.expr = self._inlined(child, at, inner, operands, inlined)
                if not any(isinstance(n, REDUCING) for n in walk(record.expr)):
                    inlined.remove(record)  # its reductions are materialised: it reads them as operands
                return record.expr
            self._materialise(child)
            key = id(child.value) if child.is_leaf else child  # one operand for a value read twice
            name = operands.setdefault(key, (f"P{len(operands)}", child))[0]
            return Access(name, at)

        rhs = _rewritten(assignment.rhs, access, renamed)
        return summed((renamed[index] for index in assignment.reduction_indices), rhs)


@dataclass(eq=False)
class _Inlined:
    """A reducing node inlined into a step: read at `at`, its expression `expr` there; `unused_loops`: the
    syntactic rule's verdict (its reduction under a loop over an index it does not use)."""

    node: object
    at: tuple
    unused_loops: bool
    expr: object = None


def _assignment(lhs: Access, rhs) -> Assignment:
    """`lhs = rhs`, the sums over the whole of `rhs` implicit (as the parser reads them)."""
    return Assignment(lhs, peeled(rhs)[1])


def _split(lhs: Access, rhs, materialised: tuple[_Inlined, ...]) -> tuple[Assignment, ...]:
    """The step `lhs = rhs` with the inlined nodes `materialised` (outermost first) computed apart: the step
    reading each as a temporary `Q0`, `Q1`, ... at the indices it reads it at, then each one's assignment."""
    temporaries = {id(record.expr): Access(f"Q{k}", record.at) for k, record in enumerate(materialised)}
    producers = tuple(_assignment(temporaries[id(record.expr)], _cut(record.expr, temporaries, record.expr))
                      for record in materialised)
    return (_assignment(lhs, _cut(rhs, temporaries)), *producers)


def _cut(expr, replaced: dict, kept=None):
    """`expr` with each subexpression `replaced` names (by identity) replaced, but `kept`, in one walk."""
    if expr is not kept and id(expr) in replaced:
        return replaced[id(expr)]
    if isinstance(expr, Access):
        return expr
    return expr.with_children(tuple(_cut(child, replaced, kept) for child in expr.children()))


def _rewritten(expr, access, renamed: dict):
    """`expr` with each Access replaced by `access(it)` and each bound index renamed."""
    if isinstance(expr, Access):
        return access(expr)
    if isinstance(expr, Sum):
        return Sum(renamed[expr.index], _rewritten(expr.body, access, renamed))
    if isinstance(expr, Reduce):
        return Reduce(expr.op, renamed[expr.index], _rewritten(expr.body, access, renamed))
    return expr.with_children(tuple(_rewritten(child, access, renamed) for child in expr.children()))


def _distributed(expr, dense: set[str], reduced: bool = False):
    """`expr` with each sum that a reduced product multiplies by a dense factor taken around the product:
    Σ_k (Σ_l X)·Y = Σ_k Σ_l X·Y where Y reads dense operands only, none at l. A lazy MTTKRP written as a
    tensordot, a broadcast product and a sum (examples/cp_als.py) inlines as `sum(l, T0(i,k,l) * T1(l,j)) *
    T2(k,j)`, whose default schedule gathers the inner sum into a workspace per (i, k); as one product,
    `T0(i,k,l) * T1(l,j) * T2(k,j)`, it walks the tensor once in its storage order, as einsum does. A sparse
    factor stays outside: it masks where the inner sum is computed (`sum(L ∘ (L @ L))`, triangles). Only
    under a reduction (`reduced`), where the product's value is summed anyway; a scaled sum that is the
    step's result (PageRank's `d * sum(j, ...)`) keeps its scalar."""
    if isinstance(expr, Sum):
        return Sum(expr.index, _distributed(expr.body, dense, True))
    if not (reduced and isinstance(expr, Mul)):
        return expr
    left, right = _distributed(expr.left, dense, True), _distributed(expr.right, dense, True)
    for inner, other, rebuilt in ((left, right, lambda body: Mul(body, right)),
                                  (right, left, lambda body: Mul(left, body))):
        if isinstance(inner, Sum) and _dense_factor(other, inner.index, dense):
            return Sum(inner.index, _distributed(rebuilt(inner.body), dense, True))
    return Mul(left, right)


def _dense_factor(expr, index: IndexVar, dense: set[str]) -> bool:
    """Whether `expr` is a product of accesses to `dense` operands (and numbers), none of them at `index`."""
    if isinstance(expr, Mul):
        return _dense_factor(expr.left, index, dense) and _dense_factor(expr.right, index, dense)
    if isinstance(expr, Access):
        return expr.tensor in dense and index not in expr.indices
    return isinstance(expr, Literal)


def _canonical(target, lhs: Access, rhs, operands: dict) -> Step:
    """The step's text with operands T0, T1, ... and indices i, j, ... by first appearance, the result's first."""
    order = list(dict.fromkeys(index for n in (lhs, *walk(rhs)) for index in _bound_or_used(n)))
    indices = dict(zip(order, map(IndexVar, index_names(len(order)))))
    placeholders = list(dict.fromkeys(n.tensor for n in walk(rhs) if isinstance(n, Access)))
    tensors = {name: f"T{k}" for k, name in enumerate(placeholders)}

    def renamed(access: Access) -> Access:
        return Access(tensors[access.tensor], tuple(indices[i] for i in access.indices))

    # sums over the whole right-hand side stay implicit, as the parser reads them back
    body = _rewritten(peeled(rhs)[1], renamed, indices)
    assignment = Assignment(Access("C", tuple(indices[i] for i in lhs.indices)), body)
    by_name = dict(operands.values())
    return Step(target, str(assignment), tuple(by_name[name] for name in placeholders))


def _bound_or_used(node) -> tuple:
    """The indices an access reads or a reduction binds (none for any other node)."""
    return node.indices if isinstance(node, Access) else (node.index,) if isinstance(node, REDUCING) else ()
