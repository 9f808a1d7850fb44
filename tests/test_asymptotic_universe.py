"""The enumeration pipeline's minimum-depth universe against a brute force written from the definition.

The brute force knows nothing of rewrites, groupings, sinking rules or placements. It grows every program
of a tiny grammar — loops over distinct indices, `where`s that compute a product of two or more factors
into a workspace of any indices, assignments once every index they use is bound — runs each on random
dense inputs with a loop-by-loop interpreter, and keeps those that compute the kernel, have no loop whose
index nothing inside uses, and index each workspace by the loops inside both its producer and its
consumer (the paper's normal form; the consumer's loop order fixes the mode order). Among those, the
ones of least depth, with every read of a sparse input or a workspace given each protocol per mode (dense
inputs located), must be exactly the programs the pipeline costs.
"""

from __future__ import annotations

from itertools import chain, combinations, count, permutations, product

import numpy as np
import pytest

import autosparse as asp
from autosparse.autoschedule.asymptotic.sketch import Access, Call
from autosparse.cin.ast import Assign, Forall as Loop, Where

KERNELS = {
    "SpMV": ("a(i) = B(i,j) * c(j)", {"B": "ds"}),
    "SpGEMM": ("A(i,j) = B(i,k) * C(j,k)", {"B": "ds", "C": "ds", "A": "ds"}),
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"}),
}
SIZES = {"i": 2, "j": 3, "k": 4}  # distinct, so a transposed access cannot pass for the right one


def _parse(expression):
    lhs, rhs = expression.replace(" ", "").split("=")

    def access(text):
        name, rest = text.split("(")
        return name, tuple(rest.rstrip(")").split(","))

    return access(lhs), tuple(access(f) for f in rhs.split("*"))


# --- the brute force ---------------------------------------------------------------------------------


def _grown(target, factors, path, left, indices, fresh):
    """Every program that computes `target` from the product of `factors` inside the loops `path`."""
    if set(target[1]).union(*(ix for _, ix in factors)) <= set(path):
        yield ("assign", target, tuple(sorted(factors)))
    if left:
        for index in indices:
            if index not in path:
                for body in _grown(target, factors, (*path, index), left - 1, indices, fresh):
                    yield ("loop", index, body)
    for size in range(2, len(factors)):
        for group in combinations(factors, size):
            rest = list(factors)
            for factor in group:
                rest.remove(factor)
            for n in range(len(indices) + 1):
                for workspace_indices in permutations(indices, n):
                    workspace = (f"@{next(fresh)}", workspace_indices)
                    for consumer in _grown(target, (*rest, workspace), path, left, indices, fresh):
                        for producer in _grown(workspace, group, path, left, indices, fresh):
                            yield ("where", consumer, producer)


def _depth(node):
    if node[0] == "assign":
        return 0
    if node[0] == "loop":
        return 1 + _depth(node[2])
    return max(_depth(node[1]), _depth(node[2]))


def _used(node):
    if node[0] == "assign":
        return set(node[1][1]).union(*(ix for _, ix in node[2]))
    return _used(node[2]) | _used(node[1]) if node[0] == "where" else _used(node[2])


def _loops(node):
    if node[0] == "assign":
        return []
    if node[0] == "loop":
        return [node[1], *_loops(node[2])]
    return [*_loops(node[1]), *_loops(node[2])]


def _root(node):
    while node[0] != "assign":
        node = node[1] if node[0] == "where" else node[2]
    return node


def _normal(node) -> bool:
    """No idle loop; each workspace indexed by the loops inside both sides of its where."""
    if node[0] == "assign":
        return True
    if node[0] == "loop":
        return node[1] in _used(node[2]) and _normal(node[2])
    consumer, producer = node[1], node[2]
    inner = set(_loops(producer))
    shared = tuple(dict.fromkeys(i for i in _loops(consumer) if i in inner))
    return _root(producer)[1][1] == shared and _normal(consumer) and _normal(producer)


def _settled(node, scope, reduces):
    """`+=` exactly where a loop of the written tensor's scope is not one of its indices (and for a
    result that reduces anyway); the scope of a workspace starts at its where."""
    if node[0] == "assign":
        return ("assign", node[1], reduces or any(i not in node[1][1] for i in scope), node[2])
    if node[0] == "loop":
        return ("loop", node[1], _settled(node[2], (*scope, node[1]), reduces))
    return ("where", _settled(node[1], scope, reduces), _settled(node[2], (), False))


def _run(node, arrays, result):
    """Execute a settled program with Python loops over dense arrays."""
    env = dict(arrays)
    env[result[0]] = np.zeros([SIZES[i] for i in result[1]])

    def execute(node, bound):
        if node[0] == "loop":
            for value in range(SIZES[node[1]]):
                execute(node[2], {**bound, node[1]: value})
        elif node[0] == "where":
            workspace = _root(node[2])[1]
            env[workspace[0]] = np.zeros([SIZES[i] for i in workspace[1]])
            execute(node[2], bound)
            execute(node[1], bound)
        else:
            (tensor, indices), reduce, factors = node[1], node[2], node[3]
            value = 1.0
            for name, ix in factors:
                value *= env[name][tuple(bound[i] for i in ix)]
            at = tuple(bound[i] for i in indices)
            env[tensor][at] = env[tensor][at] + value if reduce else value

    execute(node, {})
    return env[result[0]]


def brute_force(expression, formats):
    """The least-depth normal programs that compute `expression`, each with its read protocols."""
    target, factors = _parse(expression)
    indices = tuple(dict.fromkeys(chain(target[1], *(ix for _, ix in factors))))
    reduces = bool(set(indices) - set(target[1]))
    rng = np.random.default_rng(0)
    arrays = {name: rng.integers(1, 5, [SIZES[i] for i in ix]).astype(float) for name, ix in factors}
    spec = ",".join("".join(ix) for _, ix in factors) + "->" + "".join(target[1])
    expected = np.einsum(spec, *(arrays[name] for name, _ in factors))
    for depth in range(len(indices) + 1):
        found = set()
        for program in _grown(target, factors, (), depth, indices, count()):
            if not _normal(program):
                continue
            settled = _settled(program, (), reduces)
            if np.array_equal(_run(settled, arrays, target), expected):
                found.add(_canonical(settled))
        if found:
            sparse = {name for name, f in formats.items() if "s" in f} - {target[0]}
            return depth, {p for program in found for p in _with_protocols(program, sparse)}
    raise AssertionError("no program computes the kernel")


def _with_protocols(program, sparse):
    reads = _reads(program)
    options = [list(product(("step", "locate"), repeat=len(ix))) if name in sparse or name.startswith("@")
               else [("locate",) * len(ix)] for name, ix in reads]
    for choice in product(*options):
        protocols = iter(choice)
        yield _map_reads(program, lambda name, ix: (name, ix, next(protocols)))


def _reads(node):
    if node[0] == "assign":
        return list(node[3])
    return _reads(node[1]) + _reads(node[2]) if node[0] == "where" else _reads(node[2])


def _map_reads(node, change):
    if node[0] == "assign":
        return ("assign", node[1], node[2], tuple(change(*factor) for factor in node[3]))
    if node[0] == "loop":
        return ("loop", node[1], _map_reads(node[2], change))
    return ("where", _map_reads(node[1], change), _map_reads(node[2], change))


def _canonical(node):
    """Workspaces renamed @0, @1, … in order of appearance, factors sorted."""
    names: dict[str, str] = {}

    def rename(name):
        if name.startswith("@") or name.startswith("w"):
            return names.setdefault(name, f"@{len(names)}")
        return name

    def visit(node):
        if node[0] == "assign":
            (tensor, ix), reduce, factors = node[1], node[2], node[3]
            return ("assign", (rename(tensor), ix), reduce,
                    tuple(sorted((rename(f[0]), *f[1:]) for f in factors)))
        if node[0] == "loop":
            return ("loop", node[1], visit(node[2]))
        return ("where", visit(node[1]), visit(node[2]))

    return visit(node)


# --- the pipeline's programs in the same form ---------------------------------------------------------


def _from_sketch(stmt):
    if isinstance(stmt, Loop):
        return ("loop", stmt.index, _from_sketch(stmt.body))
    if isinstance(stmt, Where):
        return ("where", _from_sketch(stmt.consumer), _from_sketch(stmt.producer))
    assert isinstance(stmt, Assign)
    factors = stmt.rhs.args if isinstance(stmt.rhs, Call) else (stmt.rhs,)
    assert all(isinstance(f, Access) for f in factors)
    return ("assign", (stmt.lhs.tensor, stmt.lhs.indices), stmt.accumulate,
            tuple((f.tensor, f.indices, tuple(p.value for p in f.protocols)) for f in factors))


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_min_depth_universe_equals_brute_force(kernel):
    expression, formats = KERNELS[kernel]
    depth, expected = brute_force(expression, formats)
    front = asp.autoschedule(expression, formats=formats)
    assert front.complete
    assert any(stage.name == f"4 minimum depth ({depth})" for stage in front.stages)
    pipeline = [_canonical(_from_sketch(program)) for program in front.search.costs]
    assert len(pipeline) == len(set(pipeline))  # no program costed twice
    assert set(pipeline) == expected
