"""What stage 3 may assume about sizes (Dias et al. §5.3): every size positive, the inferred facts of
each sparse tensor's levels, and the constraints a user writes as text.

A user constraint is an inequality between arithmetic expressions (`"nnz(B) <= 1e5"`, `"10*j < k"`,
`"density(B) >= 0.001"`) over index names (the dimension each index ranges over; the upper-case name
means the same), `nnz(T)` (the nonzeros of sparse tensor T), `nnz(T, i, j)` (the entries of T's
levels down to j) and `density(T)` (nnz over the dense size). It is read with Python's own parser and
only those forms are accepted: a typo is an error naming the column, not a constraint silently dropped.
"""

from __future__ import annotations

import ast
from typing import Callable, Mapping

from ...errors import AutosparseError
from ...format import Format
from ...schedule.big import Factor, level_order
from .cost import dimension, prefix_size
from .poly import ONE, Poly

_COMPARISONS = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
                ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b}


def inferred(sparse: Mapping[str, Factor], formats: Mapping[str, Format], polys: Callable[[Poly], object]) -> list:
    """Each level of a sparse tensor holds at least one entry per entry of the level above and at
    most a full dimension's worth: prefix(d-1) <= prefix(d) <= prefix(d-1)·dim(d)."""
    facts = []
    for name, factor in sparse.items():
        fmt = formats[name]
        levels = level_order(fmt, factor)
        for depth in range(1, len(levels) + 1):
            above, here = prefix_size(fmt, factor, depth - 1), prefix_size(fmt, factor, depth)
            if above != here:
                facts.append(polys(above) <= polys(here))
                facts.append(polys(here) <= polys(above * dimension(levels[depth - 1])))
    return facts


def parse_constraint(text: str, sparse: Mapping[str, Factor], formats: Mapping[str, Format], indices,
                     polys: Callable[[Poly], object]):
    """`text` as a z3 boolean over the sizes (see the module's docstring)."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise AutosparseError(f"Expected a constraint such as 'nnz(B) <= 1e5' or '10*j < k', but {text!r} does "
                              f"not parse at column {(error.offset or 1)}") from None

    def fail(node, what):
        raise AutosparseError(f"Expected {what} in constraint {text!r} at column {node.col_offset + 1}")

    def size_of(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            index = node.id.lower() if node.id.lower() in indices else node.id
            if index not in indices:
                fail(node, f"an index among {sorted(indices)}")
            return polys(dimension(index))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = size_of(node.left), size_of(node.right)
            return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                    ast.Div: lambda: a / b}[type(node.op)]()
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -size_of(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("nnz", "density"):
            return tensor_size(node)
        fail(node, "a number, an index, nnz(T), nnz(T, i, …), density(T) or + - * /")

    def tensor_size(node):
        names = [a.id if isinstance(a, ast.Name) else None for a in node.args]
        if not names or None in names or names[0] not in sparse:
            fail(node, f"{node.func.id}(T, …) of a sparse tensor among {sorted(sparse)}")
        factor, fmt = sparse[names[0]], formats[names[0]]
        levels = level_order(fmt, factor)
        depth = len(levels)
        if len(names) > 1:
            if tuple(names[1:]) != levels[:len(names) - 1]:
                fail(node, f"the indices of {names[0]}'s first levels, in storage order ({', '.join(levels)})")
            depth = len(names) - 1
        size = polys(prefix_size(fmt, factor, depth))
        if node.func.id == "nnz":
            return size
        dense = ONE
        for index in levels:
            dense = dense * dimension(index)
        return size / polys(dense)

    if not isinstance(tree, ast.Compare) or len(tree.ops) != 1 or type(tree.ops[0]) not in _COMPARISONS:
        fail(tree, "one comparison (<, <=, >, >=, ==)")
    return _COMPARISONS[type(tree.ops[0])](size_of(tree.left), size_of(tree.comparators[0]))
