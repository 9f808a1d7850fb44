"""Tensors: storage arrays, validation, canonical entries and conversions (to and from numpy, scipy and
pydata sparse)."""

from .tensor import Tensor

__all__ = ["Tensor"]
