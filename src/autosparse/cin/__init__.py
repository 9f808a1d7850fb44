"""Concrete index notation: the IR every schedule is written in, its default schedule and its parser."""

from .ast import (Access, Assign, Expr, Forall, Protocol, Sequence, Stmt, TensorVar, Where, accesses, assignments,
                  default_access, default_protocol, loop_indices, tensors, walk)
from .concretize import concretize, default_loops, legalise, loop_order
from .parser import parse_cin

__all__ = [
    "Access", "Assign", "Expr", "Forall", "Protocol", "Sequence", "Stmt", "TensorVar", "Where", "accesses",
    "assignments", "concretize", "default_access", "default_loops", "default_protocol", "legalise", "loop_indices", "loop_order",
    "parse_cin", "tensors", "walk",
]
