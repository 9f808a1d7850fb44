"""`fused(f)`: a function of arrays recorded once as a lazy program per kinds of its arguments, planned once,
and replayed on every later call with like arguments — the plan's kernels run one after another, with
nothing recorded or planned again.

Why: a solver's step (PageRank's `d·(M @ r) + t`, a CG iteration) fuses into few kernels, but recording it
through `lazy`/`compute` costs microseconds a node, every iteration, as much as the vector passes that fusion
removes when the vectors are short. A traced step pays that once. As a tracing compiler does (jax.jit,
finch-tensor-lite's `fused`), the trace sees the arguments' kinds — each one's type, format, shape, dtype and
fill, and which arguments are one value — never their values: a function whose Python control flow reads an
argument's values cannot be traced, and asking for one (`bool(x)`, `compute(x)` inside it) raises instead of
baking one call's values into every later call. Arrays the function reads from outside its arguments are held
as they are, so one changed in place is read anew; a number (or a list) given as an argument is an array in
numpy's type for it (float64 for a float), where a number written in the function is typed as the eager
operators type it (`0.5 * x` of float32 is float32).

Once a replay has run each step's kernel, later replays call those kernels directly: a run of steps whose
results are dense goes to C in one call (runtime/sequence.py), each result's array made first, so a short
kernel costs its signature check and its arguments' addresses rather than evaluate's whole warm path (a CG
iteration on bcsstk13: 99 -> 91 µs, of which the sparse product's C is 45).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .. import api
from ..config import num_threads as default_threads
from ..runtime import address, sequence
from ..tensor import Tensor
from ..tensor.interop import is_scipy
from . import dense
from .lazy import LazyArray, as_result, computed, lazy, operand_of, tracing
from .plan import leaf_kind, plan

#: Traces a fused function keeps, one per kinds of its arguments; emptied when it holds this many.
KEPT = 64


def fused(function=None, *, schedule=None):
    """`function` (of arrays, returning an array or a tuple of them) traced into a lazy program on its first
    call with each kind of arguments, its kernels replayed on later ones: `@fused` or `@fused(schedule=
    "auto")` (each step autoscheduled as `evaluate` does it). On LazyArrays the function records into their
    program, as any array function does."""
    if function is None:
        return lambda function: Fused(function, schedule)
    return Fused(function, schedule)


class Fused:
    """A fused function: its traces by the kinds of the arguments (`traces` counts them, for tests)."""

    def __init__(self, function, schedule=None):
        functools.update_wrapper(self, function)
        self.function, self.schedule = function, schedule
        self._traces: dict = {}

    @property
    def traces(self) -> int:
        return len(self._traces)

    def __call__(self, *arguments):
        for argument in arguments:
            if isinstance(argument, LazyArray):
                return self.function(*arguments)
        values = _arrays(arguments)
        return self._trace(values).run(values)

    def expressions(self, *arguments) -> tuple[str, ...]:
        """The kernels a call with arguments like these runs, in order, as index notation (traced if need be)."""
        return tuple(step.expression for step in self._trace(_arrays(arguments)).steps)

    def _trace(self, values: list) -> _Trace:
        key = _kinds(values)
        trace = self._traces.get(key)
        if trace is None:
            if len(self._traces) >= KEPT:
                self._traces.clear()
            trace = self._traces[key] = _Trace.of(self.function, values, self.schedule)
        return trace


def _arrays(arguments: tuple) -> list:
    """The arguments as a trace reads them: Tensors, numpy arrays and scipy matrices as they are, numbers and
    lists as numpy arrays."""
    return [value if type(value) in _HELD or isinstance(value, (Tensor, np.ndarray)) or is_scipy(value)
            else np.asarray(value) for value in arguments]


#: The arguments' types a call reads as they are, asked first: a step of a solver on a few thousand rows
#: lasts about a hundred microseconds, and a call's own Python was a sixth of it.
_HELD = (np.ndarray, Tensor)


def _kinds(values: list) -> tuple:
    """What a trace depends on of its arguments: each one's kind as the planner reads a leaf (its type and
    format), shape, dtype and fill, and the first argument that is the same value."""
    first: dict = {}
    kinds = []
    for k, value in enumerate(values):
        kind = leaf_kind(value) if type(value) is not np.ndarray else _ARRAY
        kinds.append((kind, value.shape, value.dtype, value.fill if type(value) is Tensor else 0,
                      first.setdefault(id(value), k)))
    return tuple(kinds)


_ARRAY = leaf_kind(np.empty(0))


@dataclass(frozen=True)
class _Step:
    """One kernel of a trace: `expression` of the run's values, named T0, T1, ...; its result is the run's
    next value."""

    expression: str
    operands: tuple[tuple[str, int], ...]  # each operand's name and the position of its value in the run
    shape: tuple[int, ...]  # the result's shape and dtype (as_operand)
    dtype: np.dtype

    def read(self, run: list) -> dict:
        """The step's operands by name, from the run's values."""
        return {name: run[source] for name, source in self.operands}


@dataclass(frozen=True)
class _Trace:
    """A planned program over a run's values: the arguments' operands first, then `constants` (the values of
    the program's other leaves), then each step's result; `results` says which value each output is, `single`
    whether the function returned one array, not a tuple."""

    arguments: int
    constants: tuple
    steps: tuple[_Step, ...]
    results: tuple[tuple, ...]  # each output's position in the run, shape and dtype; a leaf's: its value
    single: bool
    schedule: object
    # each step's kernel once learned (`_computed`; None before, False: none), by what evaluate's choice of a
    # kernel reads of the arguments beyond their kinds (`_learning`)
    learned: dict = field(compare=False, default_factory=dict)

    @classmethod
    def of(cls, function, values: list, schedule) -> _Trace:
        """`function` recorded on lazy arguments like `values`, and planned."""
        lazies = [lazy(value) for value in values]
        with tracing():
            returned = function(*lazies)
        single = not isinstance(returned, tuple)
        outputs = [lazy(value).node for value in ((returned,) if single else returned)]
        steps = plan(outputs)
        position = {}
        for k, argument in enumerate(lazies):
            position.setdefault(argument.node, k)
        constants = []
        for node in [*(operand for step in steps for operand in step.operands), *outputs]:
            if node.is_leaf and node not in position:
                position[node] = len(values) + len(constants)
                constants.append(node.operand)
        start = len(values) + len(constants)
        position.update((step.target, start + k) for k, step in enumerate(steps))
        made = tuple(_Step(step.expression, tuple((f"T{k}", position[operand]) for k, operand in enumerate(step.operands)),
                           step.target.shape, step.target.dtype)
                     for step in steps)
        results = tuple((position[node], node.shape, node.dtype) if not node.is_leaf or position[node] < len(values)
                        else node.value for node in outputs)
        return cls(len(values), tuple(constants), made, results, single, schedule)

    def run(self, values: list):
        """The outputs for the arguments `values` (of the kinds traced). A run of steps whose kernels were learned
        (`_computed`) and give dense results is one native call (runtime/sequence.py): each result's array is
        made, and each kernel's arguments gathered, before any of them runs."""
        run = [value if type(value) in _HELD else operand_of(value) for value in values]
        run.extend(self.constants)
        kernels = self.learned.get(key := _learning(values))
        if kernels is None:
            kernels = self.learned[key] = [None] * len(self.steps)
        pending: list = []  # (step, bound call, its args, its result) not run yet; the results are in `run`
        for k, step in enumerate(self.steps):
            operands = step.read(run)
            kernel = kernels[k]
            bound = kernel.warm_bound(operands) if kernel else None
            if bound is None or not step.shape and bound.call.value_dtype != step.dtype:  # converted: ordinary
                if self._flush(pending, run, kernels):  # a kernel ran again: its result is a new array
                    operands = step.read(run)
                run.append(self._computed(k, operands, kernels))
                continue
            result, args = bound.dense_result(), bound.arguments(operands)
            args[bound.call.outputs[0][0]] = address(result)
            pending.append((k, bound, args, result))
            run.append(result)
        self._flush(pending, run, kernels)
        outputs = tuple(result if type(result) is not tuple else values[result[0]] if result[0] < self.arguments
                        else as_result(run[result[0]], *result[1:]) for result in self.results)
        return outputs[0] if self.single else outputs

    def _computed(self, k: int, operands: dict, kernels: list):
        """Step k's value the ordinary way (`computed`), and the kernel it ran kept in `kernels` for later runs:
        False where none is to be called directly (numpy's step, a step autoscheduled per call)."""
        step = self.steps[k]
        value = computed(step.expression, operands, self.schedule, step.shape, step.dtype)
        if kernels[k] is None:
            kernels[k] = self.schedule is None and not dense.steps(step.expression, operands) and \
                api.warm_kernel(step.expression, operands) or False
        return value

    def _flush(self, pending: list, run: list, kernels: list) -> bool:
        """The pending steps run in one native call. A kernel that fails there, and those after it, run again
        the ordinary way, which raises what a call of it raises (or retries as a call retries): whether any
        did."""
        if not pending:
            return False
        failed = sequence.run_sequence([(bound, args) for _, bound, args, _ in pending])
        again = pending[len(pending) if failed is None else failed[0]:]
        for k, _, _, _ in again:
            run[self.arguments + len(self.constants) + k] = self._computed(k, self.steps[k].read(run), kernels)
        pending.clear()
        return bool(again)


def _learning(values: list) -> tuple:
    """What evaluate's choice of a kernel reads beyond the kinds a trace is keyed by (`api._warm_key`): the
    threads it may run on and each Tensor argument's stored entries, by magnitude."""
    return default_threads(), tuple(value.nnz.bit_length() for value in values if type(value) is Tensor)
