"""What a worker runs: a chunk's kernel, and the addition of two partial results.

A task carries a `KernelSpec` (text and format names, cheap to ship) rather than a Kernel; each worker
process builds the Kernel once per spec and keeps it, and the compiled object is found in the on-disk
kernel cache, so a kernel is compiled at most once per machine and loaded once per worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..api import Kernel
from ..tensor import Tensor
from ..tensor.slicing import join
from .partitioned import TensorFile, loaded

_kernels: dict["KernelSpec", Kernel] = {}


@dataclass(frozen=True)
class KernelSpec:
    """Everything that builds a chunk's kernel: the assignment, each tensor's format, the schedule
    (commands or CIN text, or None for the default) and whether loops co-iterate as `auto` chooses."""

    expression: str
    formats: tuple[tuple[str, str], ...]
    schedule: object = None  # None, text, a Schedule or CIN: what `compile` takes
    coiteration: str | None = None
    num_threads: int | None = None

    def kernel(self) -> Kernel:
        kernel = _kernels.get(self)
        if kernel is None:
            kernel = _kernels[self] = Kernel(self.expression, dict(self.formats), self.schedule, self.num_threads,
                                             coiteration=self.coiteration)
        return kernel


def run_chunk(spec: KernelSpec, operands: Mapping[str, "Tensor | TensorFile"]):
    """One chunk's result: a Tensor in the spec's result format (dense too: chunks are joined as
    tensors), or a number for order 0."""
    return spec.kernel().compute(**{name: loaded(value) for name, value in operands.items()})


def add(left, right, result_format: str):
    """Two partial results added, entry by entry (numbers for order 0); stored entries of either stay
    stored, as a sum of sparse tensors keeps the union of their patterns."""
    if not isinstance(left, Tensor):
        return left + right
    modes = ",".join(f"i{k}" for k in range(left.order))
    spec = KernelSpec(f"R({modes}) = P({modes}) + Q({modes})",
                      (("P", str(left.format)), ("Q", str(right.format)), ("R", result_format)))
    return spec.kernel().compute(P=left, Q=right)


def joined(chunks: list, mode: int) -> Tensor:
    """A partitioned operand whole, from its chunks (Dask hands over the resident ones' values)."""
    return join([loaded(c) for c in chunks], mode)


def to_format(result, fmt: str):
    return result.to_format(fmt) if isinstance(result, Tensor) else result


def describe(result: Tensor) -> tuple[str, tuple[int, ...], int, str]:
    """What the client keeps of a result left on a worker."""
    return str(result.format), result.shape, result.nnz, str(result.dtype)


def kernels_built() -> int:
    """How many kernels this process has built (tests check that a worker builds each once)."""
    return len(_kernels)
