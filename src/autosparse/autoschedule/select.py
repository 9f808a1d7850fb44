"""Choosing a frontier candidate for the operands at hand: every candidate estimated on them, only near
ties run (`tiebreak`).

Each candidate's cost is a union of conjunctive queries; on actual operands each query has a size: the
number of distinct head tuples for which some binding of the other variables makes every atom true. That
size is computed exactly where it is cheap — a variable only one atom mentions is projected away, atoms
over the same variables are intersected, a join is counted from per-key multiplicities when no variable
is projected — and otherwise by sampling values of one head variable (a fixed seed, so the same operands
give the same choice) and counting the rest exactly. Each candidate is costed as its CIN runs
(`Candidate.running_cost`: a mode stored dense is visited whole even where the sketch steps it), not as
the sketch promised, and the part of that work which builds hash-table temporaries weighs TABLE_WEIGHT
times (`Candidate.table_cost`): the one constant factor large enough to turn an asymptotic win into a
loss (a schedule that skips empty slices by scattering into a 2-D hash table against one that appends
row after row through dense vectors). Locating into an operand stored with a hashed level is a probe
into a table as large as one slice, PROBE_WEIGHT times (`Candidate.probe_cost`). Writing a temporary of
one index stored dense goes through the lowering's list workspace (a mark checked, a coordinate listed,
the list sorted), LIST_WEIGHT times (`Candidate.list_write_cost`): where a register or a dense array of
more indices would do, it is the difference between TTMc's programs. What a task set cannot see is
priced on the operands too: reformatting each operand the candidate reads in another format, on every
call (`Candidate.transposes`: a counting sort, CONVERSION_WEIGHT per entry, TENSOR_CONVERSION_FACTOR
times that for a tensor of three or more modes); clearing each dense workspace of two or more dimensions
over its whole extent each time its `where` runs (`Candidate.dense_workspaces`), and refusing (ranking
last) one past the memory limit; and accessing a dense tensor (an operand or a temporary) out of stride,
STRIDE_WEIGHT times where it outgrows the private caches and CACHED_STRIDE_WEIGHT times where it fits
them (`Candidate.scattered_costs`). The default schedule competes too (`Candidates.default`, estimated
by its CIN as its lowering runs it), so a pick is never a guess against what the user gets without
autoscheduling. The candidate with the least work wins; candidates whose estimates lie within a few
percent of the best are timed on the operands (`tiebreak`: the best of each model and the default among
them), the decision remembered per expression, formats and size class; remaining exact ties go to fewer
hashed levels, then fewer temporaries (a workspace written and read back does the same work twice, which
a union of task sets cannot see), then fewer operands to reformat. The ranking itself is computed once
per front and size class of the operands (`ranking`).
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from math import prod
from typing import Mapping
from weakref import WeakKeyDictionary

import numpy as np

from ..config import memory_limit
from ..errors import AutosparseError
from ..notation import accesses
from ..tensor import Tensor, as_tensor
from . import tiebreak
from .asymptotic.cost import Cost
from .asymptotic.query import Query
from .asymptotic.realise import hash_levels
from .sparseauto.runtime import private_cache_bytes

#: A join with more rows than this is sampled instead of materialised.
EXACT_ROWS = 1 << 20
SAMPLES = 256
#: What a task that accesses a hash-table temporary costs, in tasks that access arrays: a probe, a cache
#: miss where an array access would stream, an insert in each of the bound and fill phases, and the
#: keys sorted back into order. Measured on SpGEMMH (the 2-D table of `∀k ∀j ∀i t0(i,j) += …` against
#: merging through dense vectors, 2.6 ns per merge step): about 110× on uniform n=4,096 (69 K entries),
#: 75× on power-law 2^12 (0.9 M entries); 64 keeps every input of that kernel on the faster side.
TABLE_WEIGHT = 64
#: What locating into an operand's hashed level costs, in array tasks. Measured against the array tasks
#: of a kernel on the same input: SpGEMMH on bcsstk13 (`C(j,k@locate) * D(j,k@locate)`, D's columns
#: hashed, 42 entries each), 1.65 ns a probe against 1.6 ns a merge step; SpMTTKRP on power-law 2^12
#: (`D(j,l)` hashed per row, a different row's table at each probe), about 38 ns against 13 ns. 3 takes
#: the dearer case, which is where a probe's price decides between schedules.
PROBE_WEIGHT = 3
#: What reformatting one stored entry costs, in array tasks: a counting sort scatters each entry to a
#: random place. Measured: CSR -> CSC of a uniform 2^17 x 2^17 matrix with 1 M entries, 45 ns an entry
#: against 2.0 ns for an SpMV task on the same matrix (22.7x); each row or column pointer costs one more.
CONVERSION_WEIGHT = 20
#: How many times dearer an entry of a tensor of three or more modes is to reformat than a matrix's: it
#: is sorted on all its coordinates rather than counted into columns (uniform tensors against CSR -> CSC
#: of a matrix with as many entries: 71 against 3.3 ns an entry at 2·10^4 entries, 369 against 56 ns at
#: 10^6), and the kernels that read such tensors do array tasks that cost less (TTMc's dense inner loops,
#: 0.26 ns a task on uniform 126^3 with 2·10^4 entries, against SpMV's 2 ns): there an entry took 71 ns,
#: 270 tasks, 13.6 times CONVERSION_WEIGHT; 12 stays under.
TENSOR_CONVERSION_FACTOR = 12
#: What an access to a dense tensor out of stride costs (against its storage order, or gathered at a
#: sparse operand's coordinates), in array tasks that stream: for a tensor larger than the private
#: caches, a new cache line from memory where the next element of the line in use would do (MTTKRP's
#: factor matrices read down a column).
STRIDE_WEIGHT = 4
#: The same for a dense tensor that fits the private caches: its lines stay there, but the loop does not
#: vectorise, and a temporary written so dirties a line a write. Measured on TTMc (uniform 126^3, 2·10^4
#: entries, ranks 16; `w0(i,·,·)`, 258 KB, inside L2), least of 5 runs: 2.9 M writes down `m` 1.94 ms
#: against 0.99 ms along `m` for the same task sets (+0.33 ns a write, 0.26 ns a task); SA2 on
#: CollegeMsg: `∀l ∀j w0(l) += E(j,l) * w1(j)` (E 486 KB, read down its column) 1.6 ms against 1.0 ms
#: for `∀j ∀l w0(i,l) += E(j,l) * w1()`.
CACHED_STRIDE_WEIGHT = 2
#: What a write into a one-index dense temporary costs, in array tasks: the lowering's list workspace
#: checks a generation mark, lists the coordinates written first and sorts them for the consumer, and
#: the branch keeps the loop around the write scalar. Measured on TTMc (uniform 126^3, 2·10^4 entries,
#: ranks 16), least of 5 runs, against the same task sets written in place along `m` (0.99-1.02 ms):
#: 2.9 M writes into `w0(m)` 2.9-5.6 ms, 0.65-1.6 ns a write more than a task's 0.26 ns.
LIST_WEIGHT = 3
#: Bytes per element of a dense workspace, for the memory limit (float64 values).
VALUE_BYTES = 8


def select(front, operands: Mapping[str, object], tune: int = 0):
    """The candidate of `front` with the least estimated work on `operands` (Tensors, arrays, scipy), the
    few whose estimates tie timed on them (`tiebreak`); with `tune` > 1, the fastest of the `tune` best
    estimated, each compiled and timed on `operands`."""
    if not len(front):
        raise AutosparseError("Expected a front with candidates, but it is empty")
    if tune < 0:
        raise AutosparseError(f"Expected tune >= 0 candidates to time, but found {tune}")
    ranked = ranking(front, operands)
    if tune > 1:
        return min((cand for _, cand in ranked[:tune]), key=lambda cand: _seconds(front, cand, operands))
    return tiebreak.broken(front, ranked, operands, _seconds)


@dataclass
class Counts:
    """How often this process estimated a front's candidates, how often it reused an estimate made for
    operands of the same size class, and how many candidates it costed in full (one of each class that
    is estimated alike, `Costed.estimated_as`)."""

    estimated: int = 0
    reused: int = 0
    costed: int = 0


counts = Counts()
_rankings: "WeakKeyDictionary[object, dict[tuple, list]]" = WeakKeyDictionary()


def ranking(front, operands: Mapping[str, object]) -> list[tuple[float, object]]:
    """(estimated work, candidate) for every candidate, best first (ties to fewer hashed levels, then
    fewer temporaries, then fewer operands to reformat, then the CIN's text), computed once per size
    class of the operands (`tiebreak.size_class`) for each front."""
    per_size = _rankings.setdefault(front, {})
    size_class = tiebreak.size_class(operands)
    if size_class in per_size:
        counts.reused += 1
        return per_size[size_class]
    counts.estimated += 1
    with _collector_paused():
        work = _estimator(front, operands, _representatives(front))
        per_size[size_class] = ranked = _ordered([(work(c), c) for c in contenders(front)])
    return ranked


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a front is ranked. Realising and costing thousands of
    candidates keeps millions of small objects (sketches, tasks, queries) that find no cycle to collect,
    but as the heap grows by them the collector runs one full collection after another over everything
    the process holds: 45% of TTMc's ranking. Paused, those objects are walked once, by the next
    collection after it (measured: TTMc's 20-s front 7.4 s ranked, against 4.1 s and 1.5 s for one full
    collection after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _ordered(estimated: list[tuple[float, object]]) -> list[tuple[float, object]]:
    """`estimated` best first, ties to fewer hashed levels, temporaries and operands to reformat, then
    the CIN's text — rendered only for the exact ties that need it (most candidates are in none)."""
    def plain(wc):
        work, cand = wc
        return work, hash_levels(cand.formats), len(cand.temporaries), len(cand.transposes)

    keys = [plain(wc) for wc in estimated]
    tied = Counter(keys)
    return [wc for _, _, wc in sorted(((key, wc[1].cin_text if tied[key] > 1 else "", wc)
                                        for key, wc in zip(keys, estimated)), key=lambda kt: kt[:2])]


def contenders(front) -> list:
    """The front's candidates and the default schedule (`Candidates.default`), which a pick must beat."""
    return [*front] if front.default is None else [*front, front.default]


def _seconds(front, cand, operands: Mapping[str, object], repeat: int = 3) -> float:
    """The median time of `repeat` calls of the candidate's kernel after a warm-up call, reformatting
    the operands included (a caller who passes them as they are pays it on every call). On one thread,
    as the candidates run: the default's threads would start an OpenMP team in the selecting process,
    which a process forked from it then cannot use."""
    kernel = front.kernel(cand, num_threads=1)
    kernel(**operands)
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        kernel(**operands)
        seconds.append(time.perf_counter() - start)
    return sorted(seconds)[repeat // 2]


def estimates(front, operands: Mapping[str, object]) -> list[float]:
    """The estimated work of every candidate, in order."""
    work = _estimator(front, operands)
    return [work(c) for c in front]


def estimated_work(front, cand, operands: Mapping[str, object]) -> float:
    """One candidate's estimated work on `operands` (what `select` ranks by)."""
    return _estimator(front, operands)(cand)


def _estimator(front, operands: Mapping[str, object], alike: Mapping[int, object] | None = None):
    """A candidate's estimated work on `operands`: its running cost's size, with the tasks that access
    hash-table temporaries counted TABLE_WEIGHT times, those that probe hashed operands PROBE_WEIGHT
    times, writes into list workspaces LIST_WEIGHT times (`Candidate.list_write_cost`), and accesses out
    of stride to dense tensors STRIDE_WEIGHT times, or CACHED_STRIDE_WEIGHT times for one that fits the
    private caches (`Candidate.scattered_costs`); plus clearing its dense workspaces and
    reformatting the operands it reads in another format, on every call. A candidate whose dense
    workspaces would pass the memory limit costs infinitely much. Given `alike` (`_representatives`),
    one candidate of each class estimated alike is costed and the rest of its class get its estimate."""
    patterns, extents = _patterns(front, operands)
    size = _sizer(patterns, extents)
    indices = {a.tensor: tuple(i.name for i in a.indices)
               for a in (front.assignment.lhs, *accesses(front.assignment.rhs))}
    limit = memory_limit()

    def stride_weight(ix: tuple[str, ...]) -> int:
        return STRIDE_WEIGHT if VALUE_BYTES * prod(extents[i] for i in ix) > private_cache_bytes() \
            else CACHED_STRIDE_WEIGHT

    alike = alike or {}
    estimated: dict[int, float] = {}

    def work(cand) -> float:
        representative = alike.get(id(cand), cand)
        if id(representative) not in estimated:
            counts.costed += 1
            estimated[id(representative)] = costed(representative)
        return estimated[id(representative)]

    def costed(cand) -> float:
        cleared = [(size(runs) if runs.queries else 1.0, prod(extents[i] for i in dims))
                   for runs, dims in cand.dense_workspaces]
        if any(VALUE_BYTES * elements > limit for _, elements in cleared):
            return math.inf
        reformatted = sum((len(patterns.get(name, ())) + extents[indices[name][fmt.mode_order[0]]])
                          * (TENSOR_CONVERSION_FACTOR if len(indices[name]) > 2 else 1)
                          for name, fmt in cand.transposes.items())
        return (size(cand.running_cost) + (TABLE_WEIGHT - 1) * size(cand.table_cost)
                + (PROBE_WEIGHT - 1) * size(cand.probe_cost) + (LIST_WEIGHT - 1) * size(cand.list_write_cost)
                + sum((stride_weight(indices.get(name) or cand.temporary_indices[name]) - 1) * size(cost)
                      for name, cost in cand.scattered_costs.items())
                + sum(runs * elements for runs, elements in cleared) + CONVERSION_WEIGHT * reformatted)

    return work


_alike: "WeakKeyDictionary[object, dict[int, object]]" = WeakKeyDictionary()


def _representatives(front) -> dict[int, object]:
    """The id of each contender -> the first contender of its class estimated alike
    (`Costed.estimated_as`), which is costed for all of them. It does not depend on the operands, so it
    is found once per front: comparing the classes' keys walks whole programs."""
    if front not in _alike:
        first: dict[tuple, object] = {}
        _alike[front] = {id(cand): first.setdefault(cand.estimated_as, cand) for cand in contenders(front)}
    return _alike[front]


def _sizer(patterns: Mapping[str, np.ndarray], extents: Mapping[str, int]):
    """A cost's estimated size on these operands: the sum of its queries' sizes (within a constant
    factor of the union's, since a cost has a bounded number of queries), each query sized once
    (candidates share most of their queries, the sunk costs among them), and each operand's
    projections, sorts and slices computed once for all queries (`_Relation.memo`)."""
    sizes: dict[Query, float] = {}
    memo: dict = {}

    def size(cost: Cost) -> float:
        for query in cost.queries:
            if query not in sizes:
                sizes[query] = query_size(query, patterns, extents, memo)
        return float(sum(sizes[q] for q in cost.queries))

    return size


def _patterns(front, operands) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Each sparse operand's nonzero coordinates (rows of an int64 array), and each index's extent."""
    patterns, extents = {}, {}
    for access in accesses(front.assignment.rhs):
        name = access.tensor
        if name not in operands:
            raise AutosparseError(f"Expected operand {name} for {front.assignment}, but found {sorted(operands)}")
        tensor = operands[name] if isinstance(operands[name], Tensor) else as_tensor(operands[name],
                                                                                     front.formats[name], name)
        for index, extent in zip(access.indices, tensor.shape):
            extents[index.name] = extent
        if not front.formats[name].is_dense:
            patterns[name] = _nonzero_rows(*tensor.to_coo())
    return patterns, extents


def _nonzero_rows(coords, values) -> np.ndarray:
    """The coordinates of the nonzero values, one int64 row each (filled column by column: one copy)."""
    coords, keep = np.asarray(coords), np.asarray(values) != 0
    everything = bool(keep.all())
    rows = np.empty((len(values) if everything else int(keep.sum()), len(coords)), np.int64)
    for mode, column in enumerate(coords):
        rows[:, mode] = column if everything else column[keep]
    return rows


def query_size(query: Query, patterns: Mapping[str, np.ndarray], extents: Mapping[str, int],
               memo: dict | None = None) -> float:
    """How many head tuples of `query` the operands satisfy (exact or sampled, see the module)."""
    dims = [extents[d] for d in query.dims]
    memo = {} if memo is None else memo
    relations = [_Relation.atom(t, args, patterns[t], memo) for t, args in query.atoms]
    return _count(relations, set(range(query.head_size)), dims, np.random.default_rng(0))


class _Relation:
    """Bindings of some variables: one column per distinct variable. A relation drawn from an operand
    alone (an atom, or a projection of one) has an `origin` that names its rows whatever the variables
    are called, so queries over the same operand share its sorts, projections and slices in `memo`."""

    def __init__(self, variables, rows: np.ndarray, origin=None, memo: dict | None = None):
        self.variables, self.rows = tuple(variables), rows
        self.origin, self.memo = origin, ({} if origin is None or memo is None else memo)

    @staticmethod
    def atom(tensor: str, variables, rows: np.ndarray, memo: dict) -> "_Relation":
        """The rows of `tensor` where the modes given the same variable agree (B(i,i): the diagonal)."""
        variables = list(variables)
        firsts = tuple(variables.index(v) for v in variables)
        keep = [n for n, first in enumerate(firsts) if first == n]
        origin = (tensor, firsts)
        if ("atom", origin) not in memo:
            for n, first in enumerate(firsts):
                if first != n:
                    rows = rows[rows[:, first] == rows[:, n]]
            memo[("atom", origin)] = rows if len(keep) == len(firsts) else rows[:, keep]
        return _Relation(tuple(variables[n] for n in keep), memo[("atom", origin)], origin, memo)

    def _memoised(self, key, compute):
        """`compute()`, shared by every relation of the same origin (per object otherwise)."""
        key = (key, self.origin)
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def sorted_on(self, variables: tuple) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
        """Keys of `variables`' columns (bounded by their largest values), sorted, and the sorting
        permutation: kept, since a sampled count joins the same operand once per sample."""
        columns = tuple(self.variables.index(v) for v in variables)

        def compute():
            selected = self.rows[:, list(columns)]
            bounds = tuple(int(x) + 1 for x in selected.max(axis=0))
            keys = _keys(selected, bounds)
            order = _stable_order(keys)
            return bounds, keys[order], order

        return self._memoised(("sorted", columns), compute)

    def project(self, variables) -> "_Relation":
        columns = tuple(self.variables.index(v) for v in variables)

        def compute():
            rows = self.rows[:, list(columns)]
            if not len(rows) or not columns:
                return rows[:1]
            bounds = tuple(int(b) + 1 for b in rows.max(axis=0))
            if prod(bounds) >= 1 << 62:
                return np.unique(rows, axis=0)
            keys = _distinct(_keys(rows, bounds), prod(bounds))
            return np.stack(np.unravel_index(keys, bounds), axis=1).astype(np.int64)

        rows = self._memoised(("project", columns), compute)
        origin = None if self.origin is None else (self.origin, columns)
        return _Relation(variables, rows, origin, self.memo)

    def slicer(self, variable):
        """value -> this relation restricted to `variable` = value, without that column; sorted once,
        so each restriction is a binary search and a slice rather than a scan."""
        column = self.variables.index(variable)
        others = [n for n in range(len(self.variables)) if n != column]
        names = tuple(self.variables[n] for n in others)

        def compute():
            order = _stable_order(self.rows[:, column])
            return self.rows[order, column], self.rows[order][:, others]

        keys, rest = self._memoised(("slice", column), compute)

        def restricted(value) -> "_Relation":
            return _Relation(names, rest[np.searchsorted(keys, value, "left"):np.searchsorted(keys, value, "right")])

        return restricted


def _count(relations: list[_Relation], head: set[int], dims: list[int], rng) -> float:
    # An empty atom with no variables left is a false condition; a nonempty one is true.
    for relation in relations:
        if not len(relation.rows):
            return 0.0
    relations = _eliminated([r for r in relations if r.variables], head)
    if any(not len(r.rows) for r in relations):
        return 0.0
    used = {v for r in relations for v in r.variables}
    free = prod(dims[h] for h in head if h not in used)
    if not relations:
        return float(free)
    components = _components(relations)
    total = float(free)
    for component in components:
        total *= _component_size(component, head, dims, rng)
        if total == 0:
            break
    return total


def _eliminated(relations: list[_Relation], head: set[int]) -> list[_Relation]:
    """`relations` with existential variables projected away where it is cheap: one that a single
    relation mentions, or one whose relations join within EXACT_ROWS (∃v (R ∧ S) ∧ T, T free of v) —
    the earlier a variable goes, the smaller the joins that follow."""
    while True:
        if any(not len(r.rows) for r in relations):
            return [r for r in relations if not len(r.rows)][:1]  # false: nothing satisfies it
        relations = [r for r in relations if r.variables]
        for n, relation in enumerate(relations):
            private = [v for v in relation.variables if v not in head
                       and not any(v in other.variables for m, other in enumerate(relations) if m != n)]
            if private:
                relations[n] = relation.project([v for v in relation.variables if v not in private])
                break
        else:
            existential = {v for r in relations for v in r.variables if v not in head}
            best = None
            for v in sorted(existential):
                holding = [r for r in relations if v in r.variables]
                work = sum(len(r.rows) for r in holding)
                if best is None or work < best[0]:
                    best = (work, v, holding)
            if best is None:
                return relations
            _, v, holding = best
            joined = _join_all(holding)
            if joined is None:
                return relations
            kept = [r for r in relations if all(r is not h for h in holding)]
            relations = kept + [joined.project([u for u in joined.variables if u != v])]


def _components(relations):
    groups: list[list[_Relation]] = []
    for relation in relations:
        joined = [g for g in groups if any(set(relation.variables) & set(r.variables) for r in g)]
        merged = [relation] + [r for g in joined for r in g]
        groups = [g for g in groups if g not in joined] + [merged]
    return groups


def _component_size(relations, head, dims, rng) -> float:
    variables = sorted({v for r in relations for v in r.variables})
    if len(relations) == 1:
        return float(len(relations[0].rows))
    if len(relations) == 2 and all(v in head for v in variables):
        counted = _pair_join_size(*relations)
        if counted is not None:
            return counted
    joined = _join_all(relations)
    if joined is not None:
        kept = [v for v in joined.variables if v in head]
        return float(len(joined.project(kept).rows)) if kept else float(len(joined.rows) > 0)
    # Too large to join: sample values of a head variable (or of any variable, for a pure condition).
    pivot = max((v for v in variables if v in head), key=lambda v: _split(relations, v), default=variables[0])
    candidates = None
    for relation in relations:
        if pivot in relation.variables:
            values = np.unique(relation.rows[:, relation.variables.index(pivot)])
            candidates = values if candidates is None else np.intersect1d(candidates, values)
    if len(candidates) == 0:
        return 0.0
    chosen = candidates if len(candidates) <= SAMPLES else rng.choice(candidates, SAMPLES, replace=False)
    slicers = [r.slicer(pivot) if pivot in r.variables else (lambda _, r=r: r) for r in relations]
    found = 0.0
    for value in chosen:
        restricted = [restrict(value) for restrict in slicers]
        size = _count(restricted, {v for v in head if v in variables} - {pivot}, dims, rng)
        if pivot not in head:
            size = float(size > 0)
        found += size
    if pivot not in head:
        return float(found > 0)
    return found * len(candidates) / len(chosen)


def _pair_join_size(a: _Relation, b: _Relation) -> float | None:
    """The rows of a ⋈ b joined on one variable, without joining: for each value, the rows of `a` with it
    times the rows of `b` with it (a sparse matrix product's multiplications, from its operands' column
    and row counts). None when they share no variable or several."""
    shared = [v for v in a.variables if v in b.variables]
    if len(shared) != 1:
        return None
    column_a, column_b = (r.rows[:, r.variables.index(shared[0])] for r in (a, b))
    length = int(max(column_a.max(initial=-1), column_b.max(initial=-1))) + 1
    return float(np.dot(np.bincount(column_a, minlength=length).astype(np.float64),
                        np.bincount(column_b, minlength=length).astype(np.float64)))


def _distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """The distinct `keys` (each below `bound`), sorted: by marking them in an array of `bound` counts
    where that is not much larger than the keys (a scan instead of a sort), else by sorting them (numpy's
    hashed unique degrades to seconds on a million keys that are multiples of a power of two, as
    linearised coordinates are)."""
    if bound <= 4 * len(keys) + (1 << 16):
        return np.flatnonzero(np.bincount(keys, minlength=bound))
    ordered = keys if bool(np.all(keys[1:] >= keys[:-1])) else np.sort(keys)  # a prefix of sorted columns
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _split(relations, variable) -> tuple[int, int]:
    """How well fixing `variable` breaks a join up: the independent parts left (each counted on its own,
    their sizes multiplied), then the relations it restricts."""
    rest = [_Relation(tuple(u for u in r.variables if u != variable), r.rows[:0]) for r in relations]
    return len(_components([r for r in rest if r.variables])), sum(variable in r.variables for r in relations)


def _join_all(relations) -> _Relation | None:
    """The natural join of `relations`, or None when some step would pass EXACT_ROWS rows."""
    order = sorted(relations, key=lambda r: len(r.rows))
    result = order[0]
    pending = order[1:]
    while pending:
        nxt = next((r for r in pending if set(r.variables) & set(result.variables)), pending[0])
        pending.remove(nxt)
        result = _join(result, nxt)
        if result is None:
            return None
    return result


def _join(a: _Relation, b: _Relation) -> _Relation | None:
    shared = [v for v in a.variables if v in b.variables]
    extra = [v for v in b.variables if v not in shared]
    if not shared:
        if len(a.rows) * len(b.rows) > EXACT_ROWS:
            return None
        rows = np.hstack([np.repeat(a.rows, len(b.rows), axis=0), np.tile(b.rows[:, [b.variables.index(v) for v in extra]],
                                                                          (len(a.rows), 1))])
        return _Relation((*a.variables, *extra), rows)
    if not len(b.rows):
        return _Relation((*a.variables, *extra), np.empty((0, len(a.variables) + len(extra)), np.int64))
    bounds, kb_sorted, order = b.sorted_on(tuple(shared))
    ca = a.rows[:, [a.variables.index(v) for v in shared]]
    inside = np.all(ca < np.asarray(bounds), axis=1)  # a key past b's largest cannot match
    if not inside.all():
        a = _Relation(a.variables, a.rows[inside])
        ca = ca[inside]
    ka = _keys(ca, bounds)
    lo = np.searchsorted(kb_sorted, ka, side="left")
    hi = np.searchsorted(kb_sorted, ka, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total > EXACT_ROWS:
        return None
    left = np.repeat(np.arange(len(a.rows)), counts)
    offsets = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(total)
    right = order[offsets]
    columns = [b.variables.index(v) for v in extra]
    rows = np.hstack([a.rows[left], b.rows[right][:, columns]]) if total else np.empty((0, len(a.variables) + len(extra)), np.int64)
    return _Relation((*a.variables, *extra), rows)


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """The stable sorting permutation of `keys`, without a sort when they are in order already (an
    operand's coordinates sorted by its first levels)."""
    if len(keys) < 2 or bool(np.all(keys[1:] >= keys[:-1])):
        return np.arange(len(keys))
    return np.argsort(keys, kind="stable")


def _keys(columns: np.ndarray, bounds: tuple[int, ...]) -> np.ndarray:
    """One integer per row for the shared columns (the same bounds on both sides of a join)."""
    return columns[:, 0] if len(bounds) == 1 else np.ravel_multi_index(columns.T, bounds)
