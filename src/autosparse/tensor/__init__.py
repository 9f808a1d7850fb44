"""Tensors: storage arrays, validation, canonical entries and conversions (to and from numpy, scipy and
pydata sparse)."""

from .interop import as_tensor
from .tensor import MAX_ORDER, Tensor

__all__ = ["MAX_ORDER", "Tensor", "as_tensor"]
