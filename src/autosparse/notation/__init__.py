"""Index notation: parsing (text and einsum subscripts), the AST, and index extents from shapes."""

from .ast import Access, Add, Assignment, Div, Expr, IndexVar, Literal, Mul, Neg, Sub, Sum, accesses, walk
from .diagonal import Diagonal, split_diagonals
from .einsum import einsum_assignment, operand_name
from .extents import index_extents
from .parser import parse

__all__ = [
    "Access", "Add", "Assignment", "Diagonal", "Div", "Expr", "IndexVar", "Literal", "Mul", "Neg", "Sub", "Sum",
    "accesses", "einsum_assignment", "index_extents", "operand_name", "parse", "split_diagonals", "walk",
]
