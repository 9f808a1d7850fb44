"""Index notation + formats -> concrete index notation under the default schedule, then legalised.

The default schedule (ARCHITECTURE.md): every loop in a stable topological order of the storage-order
constraints of all accesses — ties broken by the output's index order, then by first appearance — and
no `where`. The output's constraints give way when they would make the order cyclic (a CSR to CSC copy):
legalisation then routes the writes through a temporary; so do dense operands' (CSC + a C-ordered array). Legalisation first drops the preferences of
dense operands, which are read at random in any order: when the order of the other constraints writes
the sparse output in order, it is used (SDDMM `A(i,j) = B(i,j) * C(i,k) * D(k,j)` runs i, j, k, one dot
product per stored entry, instead of i, k, j through a workspace). Otherwise it inserts a workspace
exactly where an out-of-order write into a sparse output would remain (Gustavson SpGEMM into CSR).

A reduction scoped to part of the right-hand side (`y(i) = sum(j, A(i,j) * x(j)) + z(i)`, TACO's rule)
is computed by a `where` whose producer sums it into a temporary: `∀i where(y(i) = t + z(i), ∀j t +=
A(i,j) * x(j))`. The producer sits as deep in the consumer's loops as it can: inside every loop over an
index the sum keeps whose operands let that loop come first, so the temporary is a scalar unless storage
orders forbid it (then a workspace over the remaining indices, stepped like legalisation's), unless the
loop would come back to a coordinate (unsorted COO's rows: a workspace over them, filled by one walk), or
unless it would walk an operand once per iteration of the consumer's whole last loop: `maximum(sum(k, A(i,k) *
B(k,j)), 0)` is `∀i where(∀j C(i,j) = maximum(t(j), 0), ∀k ∀j t(j) += A(i,k) * B(k,j))`, a row workspace
filled by one walk of row i and located by the consumer (TACO's SpMM), not a scalar re-walking it per j.

Operands whose storage orders disagree (CSR + CSC; CSR × CSC SpGEMM, whose only concordant order runs
an inner product over every row and column) are computed in concordant formats: `concordant_formats`
gives the mode order of the others to the operands it is cheapest to convert, and the kernel converts
them on each call (`kernel.conversions`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from itertools import permutations
from typing import Mapping

from ..errors import ScheduleError
from ..format import Format
from ..notation import ast as notation
from ..notation.ast import IndexVar, Reduce, Sum, peeled, unbound_indices
from ..notation.fills import result_fill
from ..notation.operators import Value
from .ast import (Access, Assign, Forall, Protocol, Sequence, Stmt, TensorVar, Where, accesses, assignments,
                  default_access, identity, nest, tensors)
from .provenance import Provenance, attach, split_relations
from .rewrite import bounded, fresh_name, prewalk, rebuild_expr

#: Dense workspaces larger than this many entries become hashed: a hypersparse output must not be densified.
DENSE_WORKSPACE_LIMIT = 1 << 24


def concretize(assignment: notation.Assignment, formats: Mapping[str, Format],
               extents: Mapping[IndexVar, int] | None = None, fills: Mapping[str, Value] | None = None) -> Stmt:
    """The default schedule of `assignment`, with each tensor stored in `formats[name]`, legalised.

    `extents` (when known) decide whether a workspace that legalisation needs can be a dense array.
    `fills`: the operands' fills (0 where not given); the result's is folded from them (`result_fill`).
    """
    return legalise(default_loops(assignment, formats, extents, fills), extents or {})


def default_loops(assignment: notation.Assignment, formats: Mapping[str, Format],
                  extents: Mapping[IndexVar, int] | None = None, fills: Mapping[str, Value] | None = None) -> Stmt:
    """The default schedule before legalisation: what scheduling commands rewrite."""
    fills = {} if fills is None else fills
    result = assignment.lhs.tensor
    variables = {name: TensorVar(name, fmt, fill=compiled_result_fill(assignment, fills) if name == result else
                                 fills.get(name, 0)) for name, fmt in formats.items()}
    return _loops(assignment, variables, (), extents or {})


def compiled_result_fill(assignment: notation.Assignment, fills: Mapping[str, Value]) -> Value:
    """The fill the result starts at and keeps (`notation.fills.result_fill`); 0, as every kernel had before
    fills, for `+ - * /` and sums over operands of fill 0 (their C stays the same: `a(i) + 2` writes every
    entry rather than start at 2), and where the result has no constant fill (a sum over a fill it does
    not drop computes every entry)."""
    if all(fill == 0 for fill in fills.values()) and \
            not any(isinstance(node, (notation.Apply, Reduce)) for node in notation.walk(assignment.rhs)):
        return 0
    try:
        return result_fill(assignment, fills)
    except (ScheduleError, OverflowError):
        return 0


def _loops(assignment: notation.Assignment, variables: dict[str, TensorVar], bound: tuple[IndexVar, ...],
           extents: Mapping[IndexVar, int], reduce: str = "add") -> Stmt:
    """The loops of `assignment` inside loops over `bound`, each scoped reduction a `where` producer whose
    temporary starts at the reduction's identity; the assignment accumulates by `reduce`."""
    rhs, sums = _lifted(assignment.rhs, set(variables))
    outer = notation.Assignment(assignment.lhs, rhs, assignment.accumulate)
    formats = {name: v.format for name, v in variables.items()}
    order = _order(outer, formats, bound, frozenset(sums))
    around = {name: (*bound, *order[:_depth(order, bound, summed, formats, rhs)]) for name, summed in sums.items()}
    kept = {name: tuple(i for i in order if i in unbound_indices(summed) and i not in around[name])
            for name, summed in sums.items()}
    temporaries = {name: _workspace(name, kept[name], extents, identity(_reduced_by(summed)))
                   for name, summed in sums.items()}
    # a row workspace the consumer runs over whole (`_rewalks`) is located: one load per j, no merge with its list;
    # but not into a result that stores its index sparsely, which would then hold every coordinate of the row
    # (`q @ A` over or-and with q sparse: a vector of n entries, not the ones the walk reached)
    rows = {name for name, summed in sums.items()
            if len(kept[name]) == 1 and _rewalks(kept[name], set(around[name]), summed, formats, rhs)
            and not _stores_sparse(assignment.lhs, kept[name][0], formats)}

    def read(access: notation.Access) -> Access:
        if access.tensor in temporaries:
            stepped = default_access(temporaries[access.tensor], kept[access.tensor], write=False)
            return replace(stepped, protocols=(Protocol.LOCATE,)) if access.tensor in rows else stepped
        return _access(access, variables, write=False)
    accumulate = assignment.accumulate or any(i not in bound for i in outer.reduction_indices)
    stmt = nest(order, Assign(_access(assignment.lhs, variables, write=True), rebuild_expr(rhs, read), accumulate,
                              reduce))
    for name, summed in sums.items():
        produced = notation.Assignment(notation.Access(name, kept[name]), _reduced_body(summed), accumulate=True)
        producer = _loops(produced, {**variables, **temporaries}, around[name], extents, _reduced_by(summed))
        stmt = _within(stmt, len(around[name]) - len(bound), name, producer)
    return stmt


def _reduced_by(node) -> str:
    """The operator a lifted reduction (`Sum` or `Reduce`) combines its terms with."""
    return "add" if isinstance(node, Sum) else node.op


def _reduced_body(node):
    """What a lifted reduction's producer assigns: a `Sum`'s body below all its directly nested sums (one
    producer loops over all their indices), a `Reduce`'s own body."""
    return peeled(node)[1] if isinstance(node, Sum) else node.body


def _lifted(expr, taken: set[str]) -> tuple[object, dict[str, Sum | Reduce]]:
    """`expr` with each outermost `Sum` or `Reduce` replaced by a read of a fresh temporary at the indices
    it keeps."""
    sums: dict[str, Sum | Reduce] = {}

    def lift(node):
        if not isinstance(node, (Sum, Reduce)):
            return node
        name = fresh_name("t", taken)
        sums[name] = node
        return notation.Access(name, unbound_indices(node))
    return prewalk(expr, lift), sums


def _order(assignment: notation.Assignment, formats: Mapping[str, Format], bound: tuple[IndexVar, ...],
           temporaries: frozenset[str]) -> tuple[IndexVar, ...]:
    """The loop order (see `loop_order`) of the indices not `bound` outside; for a sparse output written
    out of order, the order without the dense operands' preferences when that one writes it in order."""
    order = loop_order(assignment, formats, bound, temporaries)
    lhs = default_access(TensorVar(assignment.lhs.tensor, formats[assignment.lhs.tensor]), assignment.lhs.indices,
                         write=True)
    if _first_disorder((*bound, *order), lhs) is not None:
        relaxed = _topological(_constraints(assignment, formats, False, bound, temporaries), output=True)
        if relaxed is not None and _first_disorder((*bound, *relaxed), lhs) is None:
            order = relaxed
    return order


def _depth(order: tuple[IndexVar, ...], bound: tuple[IndexVar, ...], summed: Sum,
           formats: Mapping[str, Format], consumer) -> int:
    """How many of the consumer's outer loops the producer of `summed` can sit inside (within loops over
    `bound`): loops over indices it keeps, each of which its sparse operands let come before the
    indices not yet bound, none of which comes back to a coordinate it left (`_revisits`), and which would
    not have it walk an operand again for every index of the consumer's whole last loop (`_rewalks`)."""
    depth = 0
    kept = set(unbound_indices(summed))
    while depth < len(order) and order[depth] in kept and not _revisits(order[depth], summed, formats) and \
            _before({*bound, *order[:depth + 1]}, summed, formats) and \
            not _rewalks(order[depth:], {*bound, *order[:depth]}, summed, formats, consumer):
        depth += 1
    return depth


def _revisits(index: IndexVar, summed: Sum, formats: Mapping[str, Format]) -> bool:
    """Whether a sparse operand of `summed` stores `index` in a level that repeats coordinates in no order
    (unsorted COO's rows, or rows with their duplicates anywhere): a loop stepping it visits a coordinate
    once per run, so a producer inside would reduce each run alone and its consumer assign once per run.
    Outside, one walk gathers every run into a workspace indexed by `index` (as lowering adds, rather than
    stores, the writes of a loop that revisits: `lower.context.Scope.revisits`), which the consumer reads
    once per coordinate."""
    for access in notation.accesses(summed):
        fmt = formats.get(access.tensor)
        if fmt is None or fmt.is_dense or index not in access.indices:
            continue
        properties = fmt.levels[fmt.mode_order.index(access.indices.index(index))].properties
        if not (properties.unique or properties.ordered or properties.descending):
            return True
    return False


def _rewalks(order: tuple[IndexVar, ...], bound: set[IndexVar], summed: Sum, formats: Mapping[str, Format],
             consumer) -> bool:
    """Whether a producer of `summed` placed inside the loop over `order[0]`, the last index it keeps,
    would walk one of its operands once per index of that loop, which the consumer runs over its whole
    dimension: `maximum(sum(k, A(i,k) * B(k,j)), 0)` would walk row i of A for every j, and read B a
    column at a time. Outside that loop the sum is a row workspace over it, filled by one walk (TACO's
    SpMM: `∀i where(∀j C(i,j) = maximum(w(j), 0), ∀k ∀j w(j) += A(i,k) * B(k,j))`), A sparse or dense.
    Not where a sparse operand of the consumer bounds that loop (`B(i,j) * sum(k, ...)`, SDDMM-like: the
    scalar is computed only at its entries), nor where the producer's own loops would still run over
    `index` first (`maximum(sum(j, A(i,j) * x(j)), 0)` at i: A's rows come first either way)."""
    index = order[0]
    kept = set(unbound_indices(summed))
    sparse = lambda leaf: _stores_sparse(leaf, index, formats)
    if any(i in kept for i in order[1:]) or bounded(consumer, sparse):
        return False
    if not any(index not in access.indices and not set(access.indices) <= bound
               for access in notation.accesses(summed)):
        return False
    workspace = fresh_name("t", set(formats))
    produced = notation.Assignment(notation.Access(workspace, (index,)), _reduced_body(summed), accumulate=True)
    # the walk can come outside the loop over `index` (SpMV's over i cannot: A's rows come first)
    return loop_order(produced, {**formats, workspace: Format("d")}, tuple(bound))[0] != index


def _stores_sparse(leaf, index: IndexVar, formats: Mapping[str, Format]) -> bool:
    """Whether `leaf` is an operand storing `index` in a level that is not full."""
    fmt = formats.get(leaf.tensor) if isinstance(leaf, notation.Access) else None
    return fmt is not None and any(leaf.indices[mode] == index and not level.properties.full
                                   for mode, level in zip(fmt.mode_order, fmt.levels))


def _before(bound: set[IndexVar], summed: Sum, formats: Mapping[str, Format]) -> bool:
    """Whether every sparse operand of `summed` stores the `bound` indices above its others."""
    for access in notation.accesses(summed):
        fmt = formats.get(access.tensor)
        if fmt is None or fmt.is_dense:
            continue
        levels = [access.indices[mode] for mode in fmt.mode_order]
        flags = [index in bound for index in levels]
        if flags != sorted(flags, reverse=True):
            return False
    return True


def _within(stmt: Stmt, depth: int, name: str, producer: Stmt) -> Stmt:
    """`stmt` with `where(..., producer)` around what lies `depth` loops down the path to the reads of
    `name` (through the consumers and producers of the wheres on the way)."""
    if depth == 0:
        return Where(stmt, producer)
    if isinstance(stmt, Forall):
        return replace(stmt, body=_within(stmt.body, depth - 1, name, producer))
    if isinstance(stmt, Where):
        if any(a.tensor.name == name for assign in assignments(stmt.producer) for a in accesses(assign.rhs)):
            return replace(stmt, producer=_within(stmt.producer, depth, name, producer))
        return replace(stmt, consumer=_within(stmt.consumer, depth, name, producer))
    raise ScheduleError(f"Expected loops around the reads of {name}, but found {stmt}")


def _access(access: notation.Access, variables: Mapping[str, TensorVar], write: bool) -> Access:
    return default_access(variables[access.tensor], access.indices, write)


def _edges(access: notation.Access, fmt: Format, bound: tuple[IndexVar, ...] = ()) -> set[tuple[IndexVar, IndexVar]]:
    ordered = [access.indices[mode] for mode in fmt.mode_order if access.indices[mode] not in bound]
    return set(zip(ordered, ordered[1:]))


def loop_order(assignment: notation.Assignment, formats: Mapping[str, Format], bound: tuple[IndexVar, ...] = (),
               temporaries: frozenset[str] = frozenset()) -> tuple[IndexVar, ...]:
    """A stable topological order of the storage-order constraints (see the module docstring) of the
    indices not `bound` by loops outside; reads of `temporaries` (scoped sums) constrain nothing."""
    for dense_operands in (True, False):  # dense operands are read at random: their order is a preference
        constraints = _constraints(assignment, formats, dense_operands, bound, temporaries)
        order = _topological(constraints, output=True) or _topological(constraints, output=False)
        if order is not None:
            return order
    raise ScheduleError(f"Expected the operands' storage orders to admit one loop order for {assignment}, "
                        f"but they are cyclic: convert an operand to a format concordant with the others (a tensor "
                        f"read in two index orders: pass it twice, once converted)")


#: Past this many indices the loop orders are not searched for concordant formats (7! = 5040 orders).
CONCORDANCE_SEARCH_LIMIT = 7


def concordant_formats(assignment: notation.Assignment, formats: Mapping[str, Format],
                       stored: Mapping[str, int] | None = None) -> dict[str, Format]:
    """The formats the default schedule computes in: `formats` itself unless the sparse operands'
    storage orders are cyclic (no loop order exists), make a loop run over a whole dimension where
    another loop order, with some operands' modes reordered, would have a sparse level bound it (CSR ×
    CSC SpGEMM: an inner product over every row and column), or write a sparse result out of its
    storage order sooner than another would (CSC × CSR SpGEMM into CSR: a workspace over the whole
    result instead of one row). Then the operands to convert are those of the best loop order: fewest
    whole-dimension loops, then the result's out-of-order writes the deepest, then the fewest `stored`
    entries converted (the number of operands where those are unknown), then the later operands
    converted rather than the first. A converted operand keeps its level kinds in the mode order of the
    loops; the result and dense operands are never converted."""
    changed = _changed_formats(assignment, tuple(formats.items()),
                               None if stored is None else tuple(sorted(stored.items())))
    return {**formats, **dict(changed)}


@functools.lru_cache(maxsize=1024)  # `evaluate` builds a Kernel per call: the search is paid once per case
def _changed_formats(assignment: notation.Assignment, given: tuple[tuple[str, Format], ...],
                     sizes: tuple[tuple[str, int], ...] | None) -> tuple[tuple[str, Format], ...]:
    """The operands `concordant_formats` reorders, with their new formats (none when it keeps them)."""
    formats, stored = dict(given), None if sizes is None else dict(sizes)
    sparse = _convertible(assignment, formats)
    if len(sparse) < 2 or assignment.scoped:  # a scoped sum's loops are placed by its own rules
        return ()
    indices = list(dict.fromkeys((*assignment.lhs.indices, *assignment.reduction_indices)))
    if len(indices) > CONCORDANCE_SEARCH_LIMIT:
        return ()
    kept = _concordance_rank(assignment, formats, {}, stored, sparse)
    best, best_rank, seen = (), kept, set()
    for order in permutations(indices):
        changed = tuple(sorted(_reordered(assignment, formats, sparse, order).items()))
        if not changed or changed in seen:
            continue
        seen.add(changed)
        rank = _concordance_rank(assignment, {**formats, **dict(changed)}, dict(changed), stored, sparse)
        if rank is not None and (best_rank is None or rank < best_rank):
            best, best_rank = changed, rank
    if kept is not None and best_rank[:2] == kept[:2]:  # nothing gained: the user's formats stand
        return ()
    return best


def _convertible(assignment: notation.Assignment, formats: Mapping[str, Format]) -> list[str]:
    """The sparse operands (in order of appearance) whose mode order the kernel may change: each read
    with one index order, of order 2 or more, not the result."""
    reads: dict[str, set[tuple]] = {}
    for access in notation.accesses(assignment.rhs):
        reads.setdefault(access.tensor, set()).add(access.indices)
    return [name for name, ways in reads.items()
            if name in formats and name != assignment.lhs.tensor and len(ways) == 1
            and not formats[name].is_dense and formats[name].order >= 2 and type(formats[name]) is Format]


def _reordered(assignment: notation.Assignment, formats: Mapping[str, Format], sparse: list[str],
               order: tuple[IndexVar, ...]) -> dict[str, Format]:
    """The sparse operands whose mode order disagrees with the loop `order`, each in its levels stored
    in that order."""
    position = {index: k for k, index in enumerate(order)}
    changed = {}
    for access in notation.accesses(assignment.rhs):
        if access.tensor in sparse and access.tensor not in changed:
            fmt = formats[access.tensor]
            modes = tuple(sorted(range(fmt.order), key=lambda m: position[access.indices[m]]))
            if modes != fmt.mode_order:
                changed[access.tensor] = Format(fmt.levels, mode_order=modes)
    return changed


def _concordance_rank(assignment: notation.Assignment, formats: Mapping[str, Format], changed: Mapping[str, Format],
                      stored: Mapping[str, int] | None, sparse: list[str]) -> tuple | None:
    """How good computing in `formats` is (lower is better, see `concordant_formats`); None when their
    storage orders are cyclic."""
    try:
        order = _order(assignment, formats, (), frozenset())
    except ScheduleError:
        return None
    lhs = default_access(TensorVar(assignment.lhs.tensor, formats[assignment.lhs.tensor]), assignment.lhs.indices,
                         write=True)
    cost = sum(stored.get(name, 0) for name in changed) if stored is not None else len(changed)
    converted = tuple(sorted(-sparse.index(name) for name in changed))
    disorder = _first_disorder(order, lhs)  # the deeper, the smaller the workspace legalisation inserts
    return _whole_loops(assignment, formats, order), -(len(order) if disorder is None else disorder), cost, converted


def _whole_loops(assignment: notation.Assignment, formats: Mapping[str, Format], order: tuple[IndexVar, ...]) -> int:
    """How many loops of `order` below the outermost that no sparse operand's level bounds: each runs over
    its whole dimension once per iteration of the loops around it (the outermost runs over its own once,
    as any order's does: CSR × DCSR's rows cost no more than the outer product's levels)."""
    whole = 0
    for depth, index in enumerate(order[1:], start=1):
        outer = set(order[:depth])
        if not any(_bounds(access, formats[access.tensor], index, outer) for access in notation.accesses(assignment.rhs)
                   if access.tensor in formats and not formats[access.tensor].is_dense):
            whole += 1
    return whole


def _bounds(access: notation.Access, fmt: Format, index: IndexVar, outer: set[IndexVar]) -> bool:
    """Whether `access` stores `index` in a level that is not full, below levels whose indices are all
    in `outer` (so that level can be iterated at that loop)."""
    for mode, level in zip(fmt.mode_order, fmt.levels):
        if access.indices[mode] == index:
            return not level.properties.full
        if access.indices[mode] not in outer:
            return False
    return False


@dataclass(frozen=True)
class _Constraints:
    indices: list[IndexVar]  # in order of priority: the output's, then first appearance
    inputs: set[tuple[IndexVar, IndexVar]]
    output: set[tuple[IndexVar, IndexVar]]


def _constraints(assignment: notation.Assignment, formats: Mapping[str, Format], dense_operands: bool,
                 bound: tuple[IndexVar, ...] = (), temporaries: frozenset[str] = frozenset()) -> _Constraints:
    """The storage-order constraints of the operands (of the dense ones too when `dense_operands`: they
    are read at random, so their order is a preference, not a need) and of the output, among the
    indices not `bound` outside."""
    appearance = [i for i in dict.fromkeys((*assignment.lhs.indices, *assignment.reduction_indices))
                  if i not in bound]
    inputs = set().union(*(_edges(a, formats[a.tensor], bound) for a in notation.accesses(assignment.rhs)
                           if a.tensor not in temporaries and (dense_operands or not formats[a.tensor].is_dense)))
    return _Constraints(appearance, inputs, _edges(assignment.lhs, formats[assignment.lhs.tensor], bound))


def _topological(constraints: _Constraints, output: bool) -> tuple[IndexVar, ...] | None:
    """The stable topological order of the inputs' constraints (and the output's when `output`), ties
    going to the index first in `constraints.indices`; None when they are cyclic."""
    edges = constraints.inputs | constraints.output if output else constraints.inputs
    placed: list[IndexVar] = []
    waiting = list(constraints.indices)
    while waiting:
        ready = [i for i in waiting if not any(after == i and before in waiting for before, after in edges)]
        if not ready:
            return None
        placed.append(ready[0])
        waiting.remove(ready[0])
    return tuple(placed)


def legalise(stmt: Stmt, extents: Mapping[IndexVar, int]) -> Stmt:
    """Route the writes of a forall nest through a workspace from the first loop at which appending to the
    sparse output would go out of order; return `stmt` itself when no loop does. A loop over a derived
    variable counts as the loop over the indices it came from, once the last of their loops is entered.
    The nest is the path of loops down to the result's assignment, through the consumers of the wheres
    that compute scoped sums (which move into the workspace's producer when they lie below the split).
    A merge of operands stored in no order is rewritten first (`unordered_merges`)."""
    body, relations = split_relations(stmt)
    if not relations:
        stmt = body = unordered_merges(body, extents)
    provenance = Provenance(relations)
    headers, assign = _result_path(body)
    if assign is None:
        return stmt
    recovered, first_loop = _recovery_order(headers, provenance)
    at = _first_disorder(recovered, assign.lhs)
    if at is None:
        return stmt
    outer = recovered[:at]
    inner = tuple(i for i in assign.lhs.level_indices if i not in outer)
    # in the output's storage order, starting at the output's fill, which its consumer copies where it is absent
    workspace = _workspace(fresh_name("w", set(tensors(body))), inner, extents, assign.lhs.tensor.fill)
    write, read = default_access(workspace, inner, write=True), default_access(workspace, inner, write=False)
    consumer = nest(inner, Assign(assign.lhs, read, accumulate=False))
    split = lambda below: Where(consumer, _into(below, write))
    return attach(_at_depth(body, first_loop[recovered[at]], split), relations)


def unordered_merges(stmt: Stmt, extents: Mapping[IndexVar, int]) -> Stmt:
    """The result's innermost loop, where it would merge operands of which some store the loop's index in no
    order (`ds~`: a product's rows, as `A @ B` leaves them), rewritten so that nothing merges them, as
    scipy's `csr_binop_csr_general` does for unsorted operands: a sum or difference of terms that each
    hold one such operand is gathered into a workspace, each term scattered into it in its own order, and
    the result appended from the workspace's list of touched coordinates (sorted only when the result's
    level is ordered). Anything else, a product among them, is returned as it is, and the pipeline sorts
    such operands first (`pipeline.conversions`): a bitmap of the unordered factor's segment would serve a
    product, but its table is the kernel's, not each thread's."""
    headers, assign = _result_path(stmt)
    if assign is None or not headers or headers[-1].body is not assign or headers[-1].coiterate is not None:
        return stmt
    index = headers[-1].index
    if assign.accumulate or assign.lhs.level_indices[-1:] != (index,) or _level_at(assign.lhs, index).properties.full \
            or assign.lhs.tensor.fill != 0:  # its terms are added into a workspace that starts at 0
        return stmt
    sparse = [a for a in accesses(assign.rhs) if index in a.level_indices and not _level_at(a, index).properties.full]
    unordered = [a for a in sparse if not _level_at(a, index).properties.ordered]
    if not unordered or len(sparse) < 2:
        return stmt
    terms = _terms(assign.rhs)
    if len(terms) == 1 or any(sum(1 for a in accesses(term) if any(a is s for s in sparse)) != 1 for term in terms):
        return stmt
    workspace = _workspace(fresh_name("w", set(tensors(stmt))), (index,), extents)
    write, read = default_access(workspace, (index,), write=True), default_access(workspace, (index,), write=False)
    producers = [Forall(index, Assign(write, term, accumulate=True)) for term in terms]
    producer = functools.reduce(lambda second, first: Sequence(first, second), reversed(producers))
    consumer = Forall(index, Assign(assign.lhs, read, accumulate=False))
    return _at_depth(stmt, len(headers) - 1, lambda loop: Where(consumer, producer))


def _level_at(access: Access, index: IndexVar):
    return access.tensor.format.levels[access.level_indices.index(index)]


def _terms(expr) -> list:
    """The terms of a sum or difference, each negated where it is subtracted."""
    if isinstance(expr, notation.Add):
        return [*_terms(expr.left), *_terms(expr.right)]
    if isinstance(expr, notation.Sub):
        return [*_terms(expr.left), *(notation.Neg(term) for term in _terms(expr.right))]
    return [expr]


def legalisation_signature(extents: Mapping[IndexVar, int]) -> tuple[bool, ...]:
    """What `legalise` reads of `extents`: for each, whether a one-index workspace over it would be too
    large to be dense. Extents with the same signature legalise a statement alike."""
    return tuple(extent > DENSE_WORKSPACE_LIMIT for extent in extents.values())


def _result_path(stmt: Stmt) -> tuple[tuple[Forall, ...], Assign | None]:
    """The loops down to the assignment of the result, through the consumers of wheres; no assignment
    when the statement is a sequence."""
    headers = []
    while isinstance(stmt, (Forall, Where)):
        if isinstance(stmt, Forall):
            headers.append(stmt)
            stmt = stmt.body
        else:
            stmt = stmt.consumer
    return tuple(headers), stmt if isinstance(stmt, Assign) else None


def _at_depth(stmt: Stmt, depth: int, rewrite) -> Stmt:
    """`stmt` with `rewrite` applied to what lies `depth` loops down the result's path."""
    if isinstance(stmt, Where):
        return replace(stmt, consumer=_at_depth(stmt.consumer, depth, rewrite))
    if depth == 0:
        return rewrite(stmt)
    return replace(stmt, body=_at_depth(stmt.body, depth - 1, rewrite))


def _into(stmt: Stmt, write: Access) -> Stmt:
    """`stmt` with the result's assignment (down the consumers of its wheres) writing `write` instead."""
    if isinstance(stmt, Assign):
        return replace(stmt, lhs=write)
    if isinstance(stmt, Where):
        return replace(stmt, consumer=_into(stmt.consumer, write))
    return replace(stmt, body=_into(stmt.body, write))


def _recovery_order(headers, provenance: Provenance) -> tuple[tuple[IndexVar, ...], dict[IndexVar, int]]:
    """The original indices in the order the loops complete them, and the first loop of each."""
    completed: list[IndexVar] = []
    first: dict[IndexVar, int] = {}
    seen: set[IndexVar] = set()
    for depth, loop in enumerate(headers):
        seen.add(loop.index)
        for root in provenance.roots(loop.index):
            first.setdefault(root, depth)
            if root not in completed and set(provenance.leaves(root)) <= seen:
                completed.append(root)
    return tuple(completed), first


def _first_disorder(loops: tuple[IndexVar, ...], lhs: Access) -> int | None:
    """The position of the first loop that breaks in-order appends to `lhs`: a loop other than the
    output's shallower indices enclosing an appended level, or the output's levels down to an appended
    one bound out of their storage order."""
    first = None
    levels = lhs.level_indices
    for depth, (index, protocol) in enumerate(zip(levels, lhs.level_protocols)):
        if protocol is not Protocol.APPEND:
            continue
        at = loops.index(index)
        allowed = set(levels[:depth])
        breaking = [p for p, loop in enumerate(loops[:at]) if loop not in allowed]
        placed = [loops.index(i) for i in levels[:depth + 1]]
        if placed != sorted(placed):
            breaking.append(min(placed))
        if breaking:
            first = min(breaking) if first is None else min(first, *breaking)
    return first


def _workspace(name: str, indices: tuple[IndexVar, ...], extents: Mapping[IndexVar, int], fill: Value = 0) -> TensorVar:
    """A scalar for no index, a dense array (with a list of touched coordinates) for one when small
    enough, else a hashed table; it starts at `fill`."""
    size = 1
    for index in indices:
        size *= extents.get(index, 1)
    letter = "d" if len(indices) == 1 and size <= DENSE_WORKSPACE_LIMIT else "h"
    return TensorVar(name, Format(letter * len(indices)), temporary=True, fill=fill)
