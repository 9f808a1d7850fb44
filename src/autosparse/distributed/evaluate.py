"""Evaluating an assignment on a Dask cluster: one task per chunk, results joined or summed.

Everything that can be wrong with the input (names, shapes, formats, dtypes, the schedule) is checked
here, before any task is sent, by the same code a local `evaluate` runs, so it fails the same way. A
chunk's cut operands travel inside its task, so a worker lost mid-run costs a rerun of its tasks
elsewhere, never the data (Dask cannot recompute scattered data, only tasks); operands every chunk reads
are scattered to every worker once (small ones ride in the tasks), so one worker's loss leaves copies on
the others.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Mapping

from ..api import Kernel
from ..api.auto import chosen
from ..api.operands import as_tensor, infer_format
from ..autoschedule.candidate import ScheduleCandidate
from ..autoschedule.front import Front
from ..autoschedule.select import estimated_work
from ..cin import loop_indices
from ..errors import AutosparseError
from ..format.spec import as_format
from ..notation import accesses, index_extents, parse
from ..tensor import Tensor
from ..tensor.slicing import join
from .partitioned import Partitioned, loaded, shipped
from .plan import Combine, Plan, make_plan, split_index
from .tasks import KernelSpec, add, run_chunk

# Chunks travel inside their tasks on purpose (see above), which Dask warns of past 10 MB: from the
# client's event-loop thread, where no `catch_warnings` around a call reaches.
warnings.filterwarnings("ignore", message="Sending large graph of size", category=UserWarning)


#: Operands every chunk reads travel inside each task up to this size (no round trip to scatter them
#: first, and a lost worker's task carries its own copy); larger ones are scattered to every worker once.
INLINE_BYTES = 1 << 20


def evaluate(expression: str, client=None, format=None, schedule=None, parts: int | None = None,
             index: str | None = None, model: str = "asymptotic", num_threads: int | None = None, **operands):
    """`autosparse.evaluate` on a Dask cluster (`client`, or the default client): operands may be
    `Partitioned` (split along their mode) or anything `evaluate` takes (split here, into `parts` chunks,
    by default one per worker). `index` forces the index to split along; `schedule` is as for
    `evaluate`, "auto" included."""
    result, _ = evaluate_planned(expression, client, format, schedule, parts, index, model, num_threads, **operands)
    return result


def evaluate_planned(expression: str, client=None, format=None, schedule=None, parts: int | None = None,
                     index: str | None = None, model: str = "asymptotic", num_threads: int | None = None,
                     **operands) -> tuple[object, Plan]:
    """`evaluate`, and the plan it ran."""
    client = _client(client)
    spec, plan, tensors = prepare(expression, format, schedule, parts or _workers(client), index, model,
                                  num_threads, **operands)
    return run(client, spec, plan, tensors), plan


def prepare(expression: str, format=None, schedule=None, parts: int = 1, index: str | None = None,
            model: str = "asymptotic", num_threads: int | None = None,
            **operands) -> tuple[KernelSpec, Plan, dict[str, "Tensor | Partitioned"]]:
    """The checked kernel, the plan and the operands as Tensors (or Partitioned), with nothing sent."""
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
    index_extents(assignment, {name: t.shape for name, t in tensors.items()})
    result = assignment.lhs.tensor
    formats = {name: str(t.format) for name, t in tensors.items()}
    formats[result] = str(as_format("dense" if format is None else format, len(assignment.lhs.indices)))
    estimate, coiteration = None, None
    if isinstance(schedule, str) and schedule.strip() == "auto":
        front, schedule = chosen(assignment, formats, _sample(assignment, tensors, index), model)
        coiteration = "auto"
        if isinstance(front, Front):
            cand, whole = schedule, {n: t for n, t in tensors.items() if isinstance(t, Tensor)}
            estimate = lambda chunk: estimated_work(front, cand, {**whole, **chunk})  # noqa: E731
    if isinstance(schedule, ScheduleCandidate):
        schedule, needed = schedule.kernel_schedule()
        formats.update({name: str(fmt) for name, fmt in needed.items()})
    kernel = Kernel(assignment, formats, schedule, num_threads, coiteration=coiteration)  # checks the schedule
    split = split_index(assignment, loop_indices(kernel.cin), tensors, index)
    plan = make_plan(assignment, split, tensors, parts, estimate)
    spec = KernelSpec(str(assignment), tuple(sorted(formats.items())), schedule, coiteration, num_threads)
    return spec, plan, tensors


def run(client, spec: KernelSpec, plan: Plan, tensors: Mapping[str, "Tensor | Partitioned"]):
    """Submit one task per chunk (the dearest first), then join or sum their results."""
    token = uuid.uuid4().hex[:12]
    whole = {name: tensors[name].gather() if isinstance(tensors[name], Partitioned) else tensors[name]
             for name in plan.broadcast}
    shared = {name: value if value.nbytes <= INLINE_BYTES else client.scatter(value, broadcast=True, hash=False)
              for name, value in whole.items()}
    ranks = sorted(range(plan.chunks), key=lambda k: -plan.costs[k])
    futures = [None] * plan.chunks
    for rank, k in enumerate(ranks):
        chunk = {name: shipped(value) for name, value in plan.chunk_operands(k, tensors).items()}
        futures[k] = client.submit(run_chunk, spec, {**chunk, **shared},
                                   key=f"autosparse-chunk-{token}-{k}", priority=plan.chunks - rank)
    result_format = dict(spec.formats)[parse(spec.expression).lhs.tensor]
    if len(futures) == 1:
        return futures[0].result()
    if plan.combine is Combine.JOIN:
        return join(client.gather(futures), plan.result_mode)
    level, depth = futures, 0
    while len(level) > 1:
        depth += 1
        pairs = [client.submit(add, a, b, result_format, key=f"autosparse-sum-{token}-{depth}-{k}")
                 for k, (a, b) in enumerate(zip(level[::2], level[1::2]))]
        level = pairs + level[len(pairs) * 2:]
    return level[0].result()


def _sample(assignment, tensors: Mapping[str, "Tensor | Partitioned"], index: str | None) -> dict[str, Tensor]:
    """Operands to select a schedule on: the whole ones, or where some come partitioned, their first
    chunk with the others cut to match."""
    if not any(isinstance(t, Partitioned) for t in tensors.values()):
        return dict(tensors)
    first = make_plan(assignment, split_index(assignment, (), tensors, index), tensors, 1)  # partitioned: split
    return {**{n: tensors[n] for n in first.broadcast},
            **{n: loaded(t) for n, t in first.chunk_operands(0, tensors).items()}}


def _client(client):
    if client is not None:
        return client
    try:
        from dask.distributed import default_client
    except ImportError:
        raise AutosparseError("Expected dask.distributed for distributed evaluation: pip install "
                              "'autosparse[distributed]'") from None
    try:
        return default_client()
    except ValueError:
        raise AutosparseError("Expected a Dask client: pass client=, or create a dask.distributed.Client "
                              "first") from None


def _workers(client) -> int:
    return max(len(client.scheduler_info()["workers"]), 1)
