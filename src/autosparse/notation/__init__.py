"""Index notation: parsing (text and einsum subscripts), the AST, the operator registry and its fills
algebra (`operators`, `fills`), and index extents from shapes."""

from .ast import (Access, Add, Apply, Assignment, Div, Expr, IndexVar, Literal, Mul, Neg, Reduce, Sub, Sum, accesses,
                  operator_of, reduction_of, walk)
from .diagonal import Diagonal, split_diagonals
from .einsum import einsum_assignment, operand_name
from .extents import index_extents
from .parser import parse

__all__ = [
    "Access", "Add", "Apply", "Assignment", "Diagonal", "Div", "Expr", "IndexVar", "Literal", "Mul", "Neg", "Reduce",
    "Sub", "Sum", "accesses", "einsum_assignment", "index_extents", "operand_name", "operator_of", "parse",
    "reduction_of", "split_diagonals", "walk",
]
