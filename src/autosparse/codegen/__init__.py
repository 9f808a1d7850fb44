"""C code generation: a typed C AST (c_ast), its one printer, a builder that keeps lowering code reading
like the C it produces, and the naming scheme of generated identifiers. Imports nothing of autosparse but
errors (floor 9)."""

from .builder import CBuilder

__all__ = ["CBuilder"]
