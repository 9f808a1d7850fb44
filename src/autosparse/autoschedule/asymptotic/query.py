"""Task sets as unions of conjunctive queries, and containment between them (Ahrens et al. §5–6).

A task set `{[i,j] | ∃k B(i,k) ∧ C(k,j)}` is the set of index tuples at which a constant-time piece of
work runs; its size is the cost. Predicates are built from nonzero atoms with ∧, ∨ and ∃ only, so every
task set normalises to a union of conjunctive queries (`Query`), and containment of unions reduces to
homomorphisms between conjunctive queries (Chandra–Merlin), found by backtracking.

Two readings keep the comparison meaningful across loop nests of different shapes:
- a task `[i,j,k]` stands for the tuples over every subset of its variables in every order (lazy subset
  semantics), so `P ⊆ Q` when a homomorphism from Q to P maps a subset of Q's head onto P's whole head;
- each head variable carries its dimension, and a head variable only covers one of the same dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import count, product
from typing import Iterable, Union

# --- predicates -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Atom:
    """`tensor(args…) ≠ 0`."""

    tensor: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.tensor}({','.join(self.args)})"


# A compound predicate keeps its hash: predicates key the analysis's memos and nest deeply, and
# recomputing the hash of every part on each lookup was a tenth of a search.


@dataclass(frozen=True, slots=True)
class And:
    parts: tuple["Pred", ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash(("∧", self.parts)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return " ∧ ".join(f"({p})" if isinstance(p, Or) else str(p) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Or:
    parts: tuple["Pred", ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash(("∨", self.parts)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return " ∨ ".join(map(str, self.parts))


@dataclass(frozen=True, slots=True)
class Exists:
    variables: tuple[str, ...]
    body: "Pred"
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash(("∃", self.variables, self.body)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return f"∃{','.join(self.variables)} ({self.body})"


@dataclass(frozen=True, slots=True)
class Const:
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


TRUE, FALSE = Const(True), Const(False)
Pred = Union[Atom, And, Or, Exists, Const]


def conj(*parts: Pred) -> Pred:
    """∧ of `parts`, with true dropped, false absorbing and nested ∧ flattened."""
    return _connective(And, FALSE, TRUE, parts)


def narrowed(*parts: Pred) -> Pred:
    """`conj(*parts)` without the nonzero reads another part implies (`∃k B(i,k)` beside `B(i,k)`): the
    same predicate, written as it is whichever loops above stepped through `B`, so that the
    interpreter's memo finds the loops below once for all of them."""
    joined = conj(*parts)
    if not isinstance(joined, And):
        return joined
    kept: list[Pred] = []
    for part in joined.parts:
        if any(_implies(other, part) for other in kept):
            continue
        kept = [other for other in kept if not _implies(part, other)]
        kept.append(part)
    return kept[0] if len(kept) == 1 else And(tuple(kept))


def _read(pred: Pred) -> tuple[tuple[str, ...], Atom] | None:
    """`pred` as (its quantified variables, its atom) when it is an atom under at most one ∃."""
    if isinstance(pred, Atom):
        return (), pred
    if isinstance(pred, Exists) and isinstance(pred.body, Atom):
        return pred.variables, pred.body
    return None


def _implies(premise: Pred, conclusion: Pred) -> bool:
    """Whether the nonzero read `premise` implies the nonzero read `conclusion` (each an atom under at
    most one ∃; anything else: False): the conclusion's quantified variables map onto the premise's
    arguments, consistently, and its free ones stay themselves."""
    first, second = _read(premise), _read(conclusion)
    if first is None or second is None or first[1].tensor != second[1].tensor:
        return False
    (hidden, atom), (quantified, wanted) = first, second
    mapping: dict[str, str] = {}
    for mine, theirs in zip(wanted.args, atom.args):
        if mine in quantified:
            if mapping.setdefault(mine, theirs) != theirs:
                return False
        elif mine != theirs or theirs in hidden:
            return False
    return True


def disj(*parts: Pred) -> Pred:
    """∨ of `parts`, with false dropped, true absorbing and nested ∨ flattened."""
    return _connective(Or, TRUE, FALSE, parts)


def _connective(node, absorbing: Const, unit: Const, parts) -> Pred:
    kept: list[Pred] = []
    for part in parts:
        if part == absorbing:
            return absorbing
        if isinstance(part, node):
            kept.extend(part.parts)
        elif part != unit:
            kept.append(part)
    return kept[0] if len(kept) == 1 else node(tuple(kept)) if kept else unit


def exists(variables: Iterable[str], body: Pred) -> Pred:
    """∃variables body, the variables renamed `v'^n` where n is one more than the deepest ∃ inside
    `body`: no ∃ shadows one around it and renaming free (index) variables later never captures them,
    while equal predicates are built equal, so the search can memoise the analysis by predicate."""
    variables = tuple(variables)
    if not variables or isinstance(body, Const):
        return body
    level = _nesting(body) + 1
    names = {v: f"{v}'^{level}" for v in variables}
    return Exists(tuple(names.values()), rename(body, names))


def _nesting(pred: Pred) -> int:
    """How deeply ∃s nest in `pred`."""
    if isinstance(pred, Exists):
        return 1 + _nesting(pred.body)
    if isinstance(pred, (And, Or)):
        return max(map(_nesting, pred.parts))
    return 0


def rename(pred: Pred, names: dict[str, str]) -> Pred:
    """`pred` with its free variables renamed (bound ones are fresh, see `exists`, and never clash)."""
    if isinstance(pred, Atom):
        return Atom(pred.tensor, tuple(names.get(a, a) for a in pred.args))
    if isinstance(pred, And):
        return And(tuple(rename(p, names) for p in pred.parts))
    if isinstance(pred, Or):
        return Or(tuple(rename(p, names) for p in pred.parts))
    if isinstance(pred, Exists):
        return Exists(pred.variables, rename(pred.body, names))
    return pred


def disjuncts(pred: Pred) -> list[frozenset[Atom]]:
    """`pred` as a disjunction of conjunctions of atoms; each ∃ gets variables of its own, so the
    conjunctions can treat every variable outside the head as existential."""
    fresh = count()

    def dnf(p: Pred) -> list[frozenset[Atom]]:
        if isinstance(p, Atom):
            return [frozenset((p,))]
        if isinstance(p, Const):
            return [frozenset()] if p.value else []
        if isinstance(p, Or):
            return [d for part in p.parts for d in dnf(part)]
        if isinstance(p, And):
            result = [frozenset()]
            for part in p.parts:
                result = [a | b for a, b in product(result, dnf(part))]
            return result
        return dnf(rename(p.body, {v: f"{v.split(chr(39))[0]}'{next(fresh)}" for v in p.variables}))

    return dnf(pred)


# --- conjunctive queries -----------------------------------------------------------------------------


@dataclass(frozen=True, eq=True)
class Query:
    """`{[h₀ ∈ dims[0], h₁ ∈ dims[1], …] | ∃… atoms}` in canonical form: variables are integers, the head
    ones first (0 … len(dims)-1), so structurally equal queries compare and hash equal."""

    dims: tuple[str, ...]
    atoms: tuple[tuple[str, tuple[int, ...]], ...]
    labels: tuple[str, ...] = field(default=(), compare=False)  # a readable name per variable

    @staticmethod
    def of(head: Iterable[tuple[str, str]], atoms: Iterable[Atom]) -> "Query":
        """The query over `head` ((variable, dimension) pairs) constrained by `atoms`."""
        head, atoms = list(head), list(atoms)
        occurrences: dict[str, list] = {}
        for atom in atoms:
            for position, arg in enumerate(atom.args):
                occurrences.setdefault(arg, []).append((atom.tensor, position))
        head.sort(key=lambda hv: (hv[1], sorted(occurrences.get(hv[0], ()))))
        ids = {var: n for n, (var, _) in enumerate(head)}
        keyed = sorted(atoms, key=lambda a: (a.tensor, tuple(ids.get(x, -1) for x in a.args)))
        for atom in keyed:
            for arg in atom.args:
                ids.setdefault(arg, len(ids))
        canonical = tuple(sorted({(a.tensor, tuple(ids[x] for x in a.args)) for a in atoms}))
        labels = [""] * len(ids)
        for var, n in ids.items():
            labels[n] = var
        return Query(tuple(d for _, d in head), canonical, tuple(labels))

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        """Kept: a query keys the containment memo on every comparison (a million in SpGEMM2's search)."""
        return hash((self.dims, self.atoms))

    @property
    def head_size(self) -> int:
        return len(self.dims)

    @cached_property
    def by_tensor(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        found: dict[str, list] = {}
        for tensor, args in self.atoms:
            found.setdefault(tensor, []).append(args)
        return {t: tuple(a) for t, a in found.items()}

    @cached_property
    def variable_count(self) -> int:
        return max([self.head_size - 1, *(x for _, args in self.atoms for x in args)]) + 1

    def without(self, *atom_numbers: int) -> "Query":
        atoms = [Atom(t, tuple(self._label(x) for x in args)) for n, (t, args) in enumerate(self.atoms)
                 if n not in atom_numbers]
        return Query.of(((self._label(h), d) for h, d in enumerate(self.dims)), atoms)

    def _label(self, var: int) -> str:
        return self.labels[var] if self.labels else f"v{var}"

    def __str__(self) -> str:
        """`{[i,k] | ∃j₁ B(i,k) ∧ C(k,j₁) ∧ D ≠ 0}`: an atom over variables of its own only says its
        tensor has a nonzero (an assumption), and prints so."""
        names = _readable(self)
        head = ",".join(names[h] for h in range(self.head_size))
        uses: dict[int, int] = {}
        for _, args in self.atoms:
            for x in set(args):
                uses[x] = uses.get(x, 0) + 1
        parts, bound = [], []
        for tensor, args in self.atoms:
            if all(x >= self.head_size and uses[x] == 1 for x in args):
                parts.append(f"{tensor} ≠ 0")
                continue
            parts.append(f"{tensor}({','.join(names[x] for x in args)})")
            bound += [names[x] for x in args if x >= self.head_size and names[x] not in bound]
        body = " ∧ ".join(parts)
        if bound:
            body = f"∃{','.join(bound)} {body}"
        return f"{{[{head}]" + (f" | {body}}}" if body else "}")


def _readable(query: Query) -> list[str]:
    """Names for printing: index names for the head, index names with a subscript for the rest."""
    base = [(query.labels[v] if query.labels else f"v{v}").split("'")[0] for v in range(query.variable_count)]
    names, used = [], {}
    for v, name in enumerate(base):
        if v < query.head_size and name not in used:
            used[name] = 0
            names.append(name)
        else:
            used[name] = used.get(name, 0) + 1
            names.append(f"{name}{_subscript(used[name])}")
    return names


def _subscript(n: int) -> str:
    return "".join("₀₁₂₃₄₅₆₇₈₉"[int(c)] for c in str(n))


class Memo(dict):
    """A memo that forgets everything once it holds `limit` entries, so that a process autoscheduling
    many expressions stays within bounded memory (one search rarely comes near the limit; past it, a
    forgotten entry is only recomputed)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.hits = self.misses = 0  # how often a lookup found its entry, and how often it computed it

    def get_or(self, key, compute):
        found = self.get(key)
        if found is None:
            self.misses += 1
            if len(self) >= self.limit:
                self.clear()
            found = self[key] = compute(key)
        else:
            self.hits += 1
        return found


_contained_memo = Memo(1 << 21)


def contained(p: Query, q: Query) -> bool:
    """P ⊆ Q on every input: a homomorphism from Q's variables to P's that maps each atom of Q onto an
    atom of P and some of Q's head variables onto all of P's, dimension for dimension."""
    return _contained_memo.get_or((p, q), lambda key: _homomorphism(*key))


def _homomorphism(p: Query, q: Query) -> bool:
    if any(t not in p.by_tensor for t in q.by_tensor):
        return False
    q_dims: dict[str, int] = {}
    for d in q.dims:
        q_dims[d] = q_dims.get(d, 0) + 1
    for d in set(p.dims):
        if p.dims.count(d) > q_dims.get(d, 0):
            return False
    options = _options(p, q)
    if options is None:
        return False
    mapping: dict[int, int] = {}

    def covers() -> bool:
        """Every head variable of P is the image of a head variable of Q of its dimension; Q's head
        variables that no atom constrains may still be sent wherever they are needed."""
        free: dict[str, int] = {}
        images: set[tuple[int, str]] = set()
        for h, d in enumerate(q.dims):
            if h in mapping:
                images.add((mapping[h], d))
            else:
                free[d] = free.get(d, 0) + 1
        for h, d in enumerate(p.dims):
            if (h, d) not in images:
                if not free.get(d):
                    return False
                free[d] -= 1
        return True

    # Past atom n, the search only sees the images of Q's head and of variables later atoms share, so
    # candidates that agree on those lead to the same outcome and one of them is enough.
    later: list[set[int]] = []
    needed = set(range(q.head_size))
    for args, _ in reversed(options):
        later.append(set(needed))
        needed.update(args)
    later.reverse()

    def search(n: int) -> bool:
        if n == len(options):
            return True
        args, fits = options[n]
        relevant = [k for k, a in enumerate(args) if a in later[n]]
        heads = any(a < q.head_size for a in args)
        tried = set()
        for candidate in fits:
            key = tuple(candidate[k] for k in relevant)
            if key in tried:
                continue
            added = []
            for a, b in zip(args, candidate):
                image = mapping.get(a)
                if image is None:
                    mapping[a] = b
                    added.append(a)
                elif image != b:
                    break
            else:
                tried.add(key)
                if (not heads or covers()) and search(n + 1):
                    return True
            for a in added:
                del mapping[a]
        return False

    return covers() and search(0)


def _options(p: Query, q: Query) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]] | None:
    """Q's atoms, each with the atoms of P it may map onto, in the order the search binds them; None
    when some atom has nowhere to go.

    A variable of Q can only go to a variable P has at the same place of an atom of the same tensor, for
    every atom the variable is in; narrowing these domains until they settle (arc consistency) and
    binding next the atom that shares the most variables with those already bound keeps the backtracking
    from trying the product of independent choices, which a failed check would otherwise exhaust."""
    atoms = [(args, list(p.by_tensor[tensor])) for tensor, args in q.atoms]
    changed = True
    while changed:
        domain: dict[int, set[int]] = {}
        for args, fits in atoms:
            for position, a in enumerate(args):
                allowed = {fit[position] for fit in fits}
                domain[a] = domain[a] & allowed if a in domain else allowed
        changed = False
        for args, fits in atoms:
            kept = [fit for fit in fits if _fits(args, fit, domain)]
            if not kept:
                return None
            if len(kept) < len(fits):
                fits[:] = kept
                changed = True
    ordered, bound = [], set()
    remaining = sorted(atoms, key=lambda atom: len(atom[1]))
    while remaining:
        best = max(range(len(remaining)),
                   key=lambda n: (len(bound.intersection(remaining[n][0])), -len(remaining[n][1])))
        args, fits = remaining.pop(best)
        ordered.append((args, fits))
        bound.update(args)
    return ordered


def _fits(args: tuple[int, ...], candidate: tuple[int, ...], domain: dict[int, set[int]]) -> bool:
    seen: dict[int, int] = {}
    for a, b in zip(args, candidate):
        if b not in domain[a] or seen.setdefault(a, b) != b:
            return False
    return True


def minimal(query: Query) -> Query:
    """`query` without the atoms that do not change it (dropping an atom can only grow a query, so it is
    redundant exactly when the smaller query is still contained in the original)."""
    n = 0
    while n < len(query.atoms):
        smaller = query.without(n)
        if contained(smaller, query):
            query = smaller
        else:
            n += 1
    return query


def folded(head: Iterable[str], atoms: Iterable[Atom]) -> list[Atom]:
    """`atoms` without those that fold onto another atom of their tensor: an atom whose variables found
    nowhere else (not in `head`, not in another atom) can take that atom's values while the rest already
    agree, so dropping it leaves an equivalent query. The abstract interpreter leaves many such copies
    (`B(i₂,k)` beside `B(i,k)`); dropping them before canonicalising keeps minimisation's containment
    checks small."""
    head = set(head)
    kept = list(dict.fromkeys(atoms))
    uses: dict[str, int] = {}
    for atom in kept:
        for x in set(atom.args):
            uses[x] = uses.get(x, 0) + 1
    folding = True
    while folding:
        folding = False
        for atom in list(kept):
            private = {x for x in atom.args if x not in head and uses[x] == 1}
            if private and any(other.tensor == atom.tensor and other is not atom
                               and _folds(atom.args, other.args, private) for other in kept):
                kept.remove(atom)
                for x in set(atom.args):
                    uses[x] -= 1
                folding = True
    return kept


def _folds(args: tuple[str, ...], onto: tuple[str, ...], private: set[str]) -> bool:
    images: dict[str, str] = {}
    return all(images.setdefault(a, b) == b if a in private else a == b for a, b in zip(args, onto))
