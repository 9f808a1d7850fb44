"""C code generation: a builder for C text and the naming scheme of generated identifiers."""

from .builder import CBuilder

__all__ = ["CBuilder"]
