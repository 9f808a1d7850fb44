"""Evaluating an assignment on a Dask cluster: one task per chunk, results joined or summed.

Everything that can be wrong with the input (names, shapes, formats, the schedule) is checked here,
before any task is sent, by the code a local `evaluate` runs, so it fails the same way. Whatever a task
reads can be made again: a chunk's cut operands travel inside its task (or are a persisted chunk, itself
a task's result, or a file the task reads), small operands every chunk reads ride in every task, and a
large one is the result of one task that Dask copies to the workers that need it. So a worker lost
mid-run costs a rerun of its tasks elsewhere, never the data (Dask can recompute tasks, not data
scattered from the client).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..api import Kernel
from ..api.auto import chosen
from ..api.kernel import unwrap_candidate
from ..pipeline import delivered
from ..pipeline.operands import infer_format
from ..pipeline.result_format import inferred_result_format
from ..autoschedule.select import estimated_work
from ..errors import AutosparseError
from ..format import Format
from ..format.spec import as_format
from ..notation import accesses, index_extents, parse
from ..tensor import Tensor, as_tensor
from ..tensor.slicing import join
from .partitioned import Partitioned, Resident, carrying_data, check_parts, loaded, shipped
from .plan import Combine, Plan, make_plan, separate_reads, split_index, work_order
from .tasks import KernelSpec, add, describe, joined, run_chunk, to_format

#: Operands every chunk reads ride inside each task up to this size (no task of their own to wait
#: for); a larger one is the result of one task, copied by Dask to each worker once.
INLINE_BYTES = 1 << 20


@dataclass(frozen=True)
class Job:
    """A checked evaluation, nothing sent yet: the chunks' kernel, the plan, the operands (Tensors or
    Partitioned) and the format the caller asked for (chunks that are summed compute an ordered twin
    of it, see `_summable`)."""

    spec: KernelSpec
    plan: Plan
    operands: Mapping[str, "Tensor | Partitioned"]
    result_format: str


def evaluate(expression: str, client=None, format=None, schedule=None, parts: int | None = None,
             index: str | None = None, model: str = "asymptotic", num_threads: int | None = None,
             gather: bool = True, **operands):
    """`autosparse.evaluate` on a Dask cluster (`client`, or the default client): operands may be
    `Partitioned` (split along their mode, into their own chunks) or anything `evaluate` takes (split
    here, into `parts` chunks, by default one per worker). `index` forces the index to split along;
    `schedule` is as for `evaluate`, "auto" included. With `gather=False` a tensor result stays on the
    workers, a `Partitioned` of resident chunks that the next evaluation can read where it lies."""
    result, _ = evaluate_planned(expression, client, format, schedule, parts, index, model, num_threads, gather,
                                 **operands)
    return result


def evaluate_planned(expression: str, client=None, format=None, schedule=None, parts: int | None = None,
                     index: str | None = None, model: str = "asymptotic", num_threads: int | None = None,
                     gather: bool = True, **operands) -> tuple[object, Plan]:
    """`evaluate`, and the plan it ran."""
    client = _client(client)
    job = prepare(expression, format, schedule, _workers(client) if parts is None else parts, index, model,
                  num_threads, **operands)
    return run(client, job, gather), job.plan


def prepare(expression: str, format=None, schedule=None, parts: int = 1, index: str | None = None,
            model: str = "asymptotic", num_threads: int | None = None, **operands) -> Job:
    """The checked kernel and its plan, with nothing sent."""
    check_parts(parts)
    assignment = parse(expression)
    if assignment.accumulate:
        raise AutosparseError(f"Expected an assignment with '=' to evaluate on a cluster, but found {assignment} "
                              f"(the result there has no earlier values to add to)")
    orders = {a.tensor: len(a.indices) for a in accesses(assignment.rhs)}
    if operands.keys() != orders.keys():
        raise AutosparseError(f"Expected operands {sorted(orders)}, but found {sorted(operands)}")
    tensors = {name: value if isinstance(value, Partitioned) else as_tensor(value, infer_format(value, orders[name]),
                                                                             name)
               for name, value in operands.items()}
    if schedule is None or schedule == "auto":  # a schedule given names the reads as they are
        assignment, tensors = separate_reads(assignment, tensors)
    index_extents(assignment, {name: t.shape for name, t in tensors.items()})
    result = assignment.lhs.tensor
    formats = {name: str(t.format) for name, t in tensors.items()}
    requested = as_format(format, len(assignment.lhs.indices)) if format is not None else \
        inferred_result_format(assignment, {name: t.format for name, t in tensors.items()})
    formats[result] = str(requested)
    estimate, coiteration = None, None
    if isinstance(schedule, str) and schedule.strip() == "auto":
        front, schedule = chosen(assignment, formats, _sample(assignment, tensors, index), model)
        coiteration = "auto"
        if schedule is not None:  # an empty front leaves the default schedule, with no estimate to balance
            cand, whole = schedule, {n: t for n, t in tensors.items() if isinstance(t, Tensor)}  # any model's
            estimate = lambda chunk: estimated_work(front, cand, {**whole, **chunk})  # noqa: E731
    schedule, needed = unwrap_candidate(schedule)
    formats.update({name: str(fmt) for name, fmt in needed.items()})
    kernel = Kernel(assignment, formats, schedule, num_threads, coiteration=coiteration)  # checks the schedule
    plan = make_plan(assignment, split_index(assignment, work_order(kernel.cin), tensors, index), tensors, parts,
                     estimate)
    if plan.combine is Combine.SUM and plan.chunks > 1:
        formats[result] = str(_summable(requested))
    spec = KernelSpec(str(assignment), tuple(sorted(formats.items())), schedule, coiteration, num_threads)
    return Job(spec, plan, tensors, str(requested))


def run(client, job: Job, gather: bool = True):
    """Submit one task per chunk (the dearest first), sum their results if the split index is summed,
    and gather (joining the chunks) or leave the result on the workers."""
    plan, tensors = job.plan, job.operands
    result = parse(job.spec.expression).lhs
    computed = dict(job.spec.formats)[result.tensor]  # the chunks' format (a sum's sorted twin)
    token = uuid.uuid4().hex[:12]
    with carrying_data():
        shared = {name: _shared(client, tensors[name], f"autosparse-operand-{token}-{name}")
                  for name in plan.broadcast}
        futures = [None] * plan.chunks
        for rank, k in enumerate(sorted(range(plan.chunks), key=lambda k: -plan.costs[k])):
            chunk = {name: shipped(value) for name, value in plan.chunk_operands(k, tensors).items()}
            futures[k] = client.submit(run_chunk, job.spec, {**chunk, **shared},
                                       key=f"autosparse-chunk-{token}-{k}", priority=plan.chunks - rank)
    if plan.combine is Combine.SUM:
        depth = 0
        while len(futures) > 1:
            depth += 1
            pairs = [client.submit(add, a, b, computed, key=f"autosparse-sum-{token}-{depth}-{k}")
                     for k, (a, b) in enumerate(zip(futures[::2], futures[1::2]))]
            futures = pairs + futures[len(pairs) * 2:]
    if gather or not result.indices:  # a number is always gathered
        value = futures[0].result() if len(futures) == 1 else join(client.gather(futures), plan.result_mode)
        return delivered(value.to_format(job.result_format)) if isinstance(value, Tensor) else value
    held = futures if computed == job.result_format else [
        client.submit(to_format, f, job.result_format, key=f"autosparse-result-{token}-{k}")
        for k, f in enumerate(futures)]
    described = client.gather([client.submit(describe, f, key=f"autosparse-describe-{token}-{k}")
                               for k, f in enumerate(held)])
    return Partitioned(tuple(Resident(f, as_format(fmt, len(shape)), shape, nnz, np.dtype(dtype))
                             for f, (fmt, shape, nnz, dtype) in zip(held, described)),
                       plan.result_mode if len(held) > 1 else 0)


def _shared(client, value: "Tensor | Partitioned", key: str):
    """An operand every chunk reads, as the tasks take it: itself if small; else one task's result,
    which Dask copies to the workers that need it (a partitioned one is joined there, from its chunks
    where they lie)."""
    if isinstance(value, Partitioned):
        return client.submit(joined, [shipped(c) for c in value.chunks], value.mode, key=key)
    return value if value.nbytes <= INLINE_BYTES else client.submit(loaded, value, pure=False, key=key)


def _summable(fmt: Format) -> Format:
    """`fmt` with its compressed levels in increasing order: partial results are added by merging,
    which needs sorted levels (the sum is converted to `fmt` at the end)."""
    levels = tuple(level.in_increasing_order() for level in fmt.levels)
    return fmt if levels == fmt.levels else Format(levels, mode_order=fmt.mode_order)


def _sample(assignment, tensors: Mapping[str, "Tensor | Partitioned"], index: str | None) -> dict[str, Tensor]:
    """Operands to select a schedule on: the whole ones, or where some come partitioned, the first
    chunk of the split, the others cut to match (or, partitioned along another index, gathered)."""
    if not any(isinstance(t, Partitioned) for t in tensors.values()):
        return dict(tensors)
    first = make_plan(assignment, split_index(assignment, (), tensors, index), tensors, 1)  # partitioned: split
    whole = {n: tensors[n].gather() if isinstance(tensors[n], Partitioned) else tensors[n] for n in first.broadcast}
    return {**whole, **{n: loaded(t) for n, t in first.chunk_operands(0, tensors).items()}}


def _client(client):
    try:
        from dask.distributed import Client, default_client
    except ImportError:
        raise AutosparseError("Expected dask.distributed for distributed evaluation: pip install "
                              "'autosparse[distributed]'") from None
    if client is not None:
        if not isinstance(client, Client):
            raise AutosparseError(f"Expected a dask.distributed.Client as client=, but found {type(client).__name__}")
        return client
    try:
        return default_client()
    except ValueError:
        raise AutosparseError("Expected a Dask client: pass client=, or create a dask.distributed.Client "
                              "first") from None


def _workers(client) -> int:
    return max(len(client.scheduler_info()["workers"]), 1)
