"""Distributed evaluation on Dask: 2 worker processes against 1, and against the same kernel in this
process, on the same data, with the per-task overhead and each call's communication measured.

    autosparse bench distributed [--kernel spmv spgemm mttkrp] [--repeat 5] [--quick]

Two LocalClusters run side by side (one and two single-threaded worker processes, loopback only), so
their calls can be interleaved as every suite interleaves contenders (autosparse_bench/timing.py). Inputs are
split one chunk per worker and held by the workers (`Partitioned.persist`), as an iterative user's
would be; "shipped" also sends the chunks with every call, the cost of a one-off evaluation; "kept
there" leaves the result on the workers (`gather=False`) and, for SpMV, takes x from them too, as an
iterative solver's vectors would stay. Contenders: "2 workers" (the one compared with), "1 worker",
"2 workers, shipped", "2 workers, kept there" and "in process" (`asp.compile` called here, no Dask).
Every result is checked against the in-process one before timing.

Sizes: SpMV on a uniform 2^22-row matrix with 64 M nonzeros and an R-MAT 2^22 graph (16 per row);
SpGEMM A·B of two uniform 200,000² matrices with 2 M nonzeros each, B broadcast (the product has about
20 M); MTTKRP on a power-law 4,000 × 4,000 × 4,000 tensor drawn from 80 M coordinates (duplicates
summed), rank 32. Each copy of an operand is held by the client, each cluster and, shipped, in flight:
these fit the 24 GB here with room to spare. --quick: a sixteenth of the nonzeros, of the rows and of
the 2-D sides, a third of the 3-D sides. The overhead rows time
a task that does nothing (one at a time: latency; 200 at once: throughput), one carrying 64 MiB to a
worker and back (the loopback link), and a whole evaluation of a 64-row SpMV (planning, two tasks
carrying x, gathering and joining y). From these and each kernel's traffic the suite projects a call's
time on more machines (`_projection`).
"""

from __future__ import annotations

import math
import time
from contextlib import ExitStack

import numpy as np

import autosparse as asp
from . import data, kernel_suite_parser, machine, quick_sizes
from .records import Records, source_hash
from .timing import Mismatch, compare

#: What the overhead rows send to a worker and back, to measure the loopback link.
TRANSFER_BYTES = 64 << 20
#: The link the projection assumes between the client and each worker: 10 Gb Ethernet.
NETWORK = 1.25e9

KERNELS = {
    "spmv": ("y(i) = A(i,j) * x(j)", "dense"),
    "spgemm": ("C(i,j) = A(i,k) * B(k,j)", "csr"),
    "mttkrp": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", "dense"),
}


def _inputs(kernel: str, scale: int, seed: int) -> dict[str, tuple[str, dict, str]]:
    """dataset -> (its description, the operands, the name of the one split across the workers)."""
    rng = np.random.default_rng(seed)
    if kernel == "spmv":
        rows, nnz = (1 << 22) // scale, 64_000_000 // scale
        uniform = data.generate("uniform", rows, rows, nnz, seed=seed)
        rmat = data.generate("rmat", 22 - scale.bit_length() + 1, edge_factor=16, seed=seed)
        return {name: (f"{m.shape[0]:,}² with {m.nnz:,} nonzeros",
                       {"A": asp.Tensor.from_scipy(m), "x": rng.random(m.shape[1])}, "A")
                for name, m in (("uniform", uniform), ("R-MAT", rmat))}
    if kernel == "spgemm":
        rows, nnz = 200_000 // scale, 2_000_000 // scale
        a = data.generate("uniform", rows, rows, nnz, seed=seed)
        b = data.generate("uniform", rows, rows, nnz, seed=seed + 1)
        return {"uniform": (f"two {rows:,}² with {nnz:,} nonzeros each",
                            {"A": asp.Tensor.from_scipy(a), "B": asp.Tensor.from_scipy(b)}, "A")}
    side, nnz, rank = 4_000 // int(round(scale ** (1 / 3))), 80_000_000 // scale, 32
    made = data.generate("powerlaw_tensor", (side,) * 3, nnz, seed=seed)
    tensor = asp.Tensor.from_coo(made.coords, made.vals, made.shape, format="sss")
    return {"power-law": (f"{side:,}³ with {tensor.nnz:,} nonzeros, rank {rank}",
                          {"B": tensor, "C": rng.random((side, rank)), "D": rng.random((side, rank))}, "B")}


def _nbytes(value) -> int:
    return value.nbytes if isinstance(value, asp.Tensor) else int(np.asarray(value).nbytes)


def _resident_vectors(kernel: str, operands: dict, held, client) -> dict:
    """SpMV's x as an iterative solver holds it: partitioned like the rows, on the workers (the previous
    call's y, left there), joined on a worker for the next call."""
    from autosparse.distributed import Partitioned

    if kernel != "spmv":
        return {}
    x = asp.Tensor.from_numpy(operands["x"])
    return {"x": Partitioned.from_tensor(x, len(held.chunks)).persist(client)}


def _checker(expected: asp.Tensor, gathered: bool = False):
    """Raises Mismatch unless a result holds `expected`'s values (compared sparse where they are);
    `gathered`: the result is left on the workers, and fetched to be checked."""
    scale = max(float(np.abs(expected.vals).max(initial=0.0)), 1.0)

    def check(result) -> None:
        result = result.gather() if gathered else result
        if expected.format.is_dense:
            values = result.to_numpy() if isinstance(result, asp.Tensor) else result  # gathered: an array
            worst = float(np.abs(values - expected.to_numpy()).max(initial=0.0))
        else:
            worst = float(abs(result.to_scipy() - expected.to_scipy()).max())
        if worst > 1e-9 * scale:
            raise Mismatch(f"the result differs from the in-process kernel's by {worst:.3g}")
    return check


def run_kernel(args, clients: dict[int, object], kernel: str) -> None:
    from dask.distributed import wait

    from autosparse.distributed import evaluate_planned, partition

    expression, fmt = KERNELS[kernel]
    for dataset, (description, operands, split) in _inputs(kernel, args.scale, args.seed).items():
        formats = {name: str(t.format) for name, t in operands.items() if isinstance(t, asp.Tensor)}
        local = asp.compile(expression, {**formats, expression.split("(")[0]: fmt})
        expected = local(**operands)
        expected = expected if isinstance(expected, asp.Tensor) else asp.Tensor.from_numpy(expected)  # a dense array
        held = {workers: partition(operands[split], workers).persist(client) for workers, client in clients.items()}
        wait([chunk.future for partitioned in held.values() for chunk in partitioned.chunks])
        contenders = {"in process": (lambda: local(**operands), _checker(expected))}
        plans = {}
        for workers, client in sorted(clients.items(), reverse=True):
            def call(c=client, w=workers):
                result, plans[w] = evaluate_planned(expression, c, fmt, **{**operands, split: held[w]})
                return result
            contenders[f"{workers} worker{'s' * (workers > 1)}"] = (call, _checker(expected))
        two = clients[2]
        contenders["2 workers, shipped"] = (lambda: evaluate_planned(expression, two, fmt, **operands)[0],
                                            _checker(expected))
        kept = {**operands, split: held[2], **_resident_vectors(kernel, operands, held[2], two)}
        contenders["2 workers, kept there"] = (lambda: evaluate_planned(expression, two, fmt, gather=False, **kept)[0],
                                               _checker(expected, gathered=True))
        timings = compare(contenders, args.repeat, budget=120)
        plan = plans[2]
        broadcast = sum(_nbytes(operands[name]) for name in plan.broadcast)
        result_bytes = _nbytes(local(**operands))
        chunk_bytes = _nbytes(operands[split])
        print(f"\n{kernel.upper()}, {dataset}: {description}; medians of {args.repeat}\n")
        print(f"plan: {plan}")
        print(f"per call: broadcast {broadcast / 1e6:,.1f} MB to each worker, result {result_bytes / 1e6:,.1f} MB "
              f"gathered; shipped chunks {chunk_bytes / 1e6:,.1f} MB\n")
        ours = timings["2 workers"].seconds
        print("| contender | ms | vs 2 workers |")
        print("|---|---:|---:|")
        for name, timing in timings.items():
            shown = f"{timing.seconds * 1e3:,.1f} | {timing.seconds / ours:.2f}×" if timing.seconds and ours else \
                f"{timing.status} | — "
            print(f"| {name} | {shown} |")
            role = "ours" if name == "2 workers" else "variant"
            args.records.timing(kernel.upper(), dataset, name, timing.seconds, role=role, status=timing.status,
                                nnz=operands[split].nnz, broadcast_bytes=broadcast, result_bytes=result_bytes,
                                chunk_bytes=chunk_bytes, source=source_hash(local))
        if ours and timings["1 worker"].seconds:
            print(f"\n2 workers vs 1: {timings['1 worker'].seconds / ours:.2f}×")
        if all(t.seconds for t in timings.values()):
            joining = _join_seconds(expression, fmt, local, operands)
            print(f"joining the 2 chunks' results on the client: {joining * 1e3:,.1f} ms")
            _projection(args, {name: t.seconds for name, t in timings.items()}, broadcast, result_bytes, joining)


def _join_seconds(expression: str, fmt: str, local, operands: dict) -> float:
    """What the client spends joining two chunks' results (their kernels run here, untimed)."""
    from autosparse.distributed import prepare
    from autosparse.tensor.slicing import join
    from .timing import seconds_of

    plan = prepare(expression, fmt, parts=2, **operands).plan
    parts = [local.compute(**{**operands, **plan.chunk_operands(k, operands)}) for k in range(plan.chunks)]  # tensors
    return min(seconds_of(lambda: join(parts, plan.result_mode)) for _ in range(3))


def _projection(args, seconds: dict[str, float], broadcast: int, result_bytes: int, joining: float) -> None:
    """The time of one call on W machines, modelled from this run: the in-process kernel divided
    evenly; the whole-evaluation overhead measured here, plus the scheduler's share of each further
    task; the traffic (`_traffic`); and joining the results on the client."""
    fixed = args.overhead["evaluate, 64-row SpMV"] + joining
    per_task = args.overhead["200 tasks at once, total"] / 200
    modelled = seconds["in process"] / 2 + fixed + _traffic(2, broadcast, result_bytes) / args.link
    print(f"\nModel check at 2 workers, loopback {args.link / 1e9:.2f} GB/s: "
          f"{modelled * 1e3:,.1f} ms modelled, {seconds['2 workers'] * 1e3:,.1f} ms measured.\n")
    print(f"Projected on W machines over {NETWORK / 1e9:.2f} GB/s (10 GbE) links, as speedup over in process:\n")
    print("| W | ms | speedup | of which traffic ms |")
    print("|---:|---:|---:|---:|")
    for machines in (2, 4, 16, 64):
        traffic = _traffic(machines, broadcast, result_bytes) / NETWORK
        total = seconds["in process"] / machines + fixed + per_task * (machines - 2) + traffic
        print(f"| {machines} | {total * 1e3:,.1f} | {seconds['in process'] / total:.2f}× | {traffic * 1e3:,.1f} |")


def _traffic(machines: int, broadcast: int, result_bytes: int) -> float:
    """Bytes on the busiest link, in sequence: a broadcast up to INLINE_BYTES rides in each of the W
    tasks, all leaving the client; a larger one leaves the client once, as a task's result, and the
    workers copy it from whoever has it, doubling the holders each round (log2 W rounds); the result
    comes back to the client."""
    from autosparse.distributed.evaluate import INLINE_BYTES

    if broadcast <= INLINE_BYTES:
        return machines * broadcast + result_bytes
    return (1 + math.ceil(math.log2(machines))) * broadcast + result_bytes


def _noop(value=None):
    return value


def overhead(args, clients: dict[int, object]) -> None:
    """A task's cost on this cluster, apart from any kernel: the round trip of one task, the share of
    each in 200 submitted at once, and a whole evaluation around a tiny kernel."""
    from autosparse.distributed import evaluate_planned, partition
    from autosparse.distributed.partitioned import carrying_data

    client = clients[2]
    tiny = asp.Tensor.from_scipy(data.generate("uniform", 64, 64, 512, seed=args.seed))
    held = partition(tiny, 2).persist(client)
    x = np.ones(64)

    def many(count: int = 200):
        client.gather([client.submit(_noop, k, pure=False) for k in range(count)])

    block = np.ones(TRANSFER_BYTES // 8)

    def round_trip():  # to a worker and back, as a chunk's operands and its result travel
        return client.submit(_noop, block, pure=False).result()

    expected = asp.Tensor.from_numpy(tiny.to_numpy() @ x)
    contenders = {
        "evaluate, 64-row SpMV": (lambda: evaluate_planned("y(i) = A(i,j) * x(j)", client, A=held, x=x)[0],
                                  _checker(expected)),
        "one task, round trip": (lambda: client.submit(_noop, pure=False).result(), None),
        "200 tasks at once, total": (many, None),
        f"one task carrying {TRANSFER_BYTES >> 20} MiB there and back": (round_trip, None),
    }
    with carrying_data():
        timings = compare(contenders, args.repeat)
    print(f"\nPer-task overhead, 2 workers; medians of {args.repeat}\n")
    print("| what | ms |")
    print("|---|---:|")
    for name, timing in timings.items():
        print(f"| {name} | {timing.seconds * 1e3:,.3f} |")
    per_task = timings["200 tasks at once, total"].seconds / 200
    carry = next(t.seconds for name, t in timings.items() if name.startswith("one task carrying"))
    args.link = 2 * TRANSFER_BYTES / max(carry - timings["one task, round trip"].seconds, 1e-9)
    print(f"\nper task when many are in flight: {per_task * 1e3:.3f} ms; loopback transfer "
          f"{args.link / 1e9:.2f} GB/s")
    for name, timing in timings.items():
        args.records.timing("overhead", "2 workers", name, timing.seconds,
                            role="ours" if name.startswith("evaluate") else "variant", status=timing.status)
    args.overhead = {name: timing.seconds for name, timing in timings.items()}


def main(argv: list[str] | None = None) -> None:
    parser = kernel_suite_parser(__doc__, KERNELS, repeat=5, quick_help="a sixteenth of the nonzeros, 3 repeats")
    args = parser.parse_args(argv)
    quick_sizes(parser, args, repeat=3)
    args.records = Records(args.json)
    args.scale = 16 if args.quick else 1
    from dask.distributed import Client, LocalCluster

    print(f"- machine: {machine.describe()}")
    print("- clusters: dask.distributed LocalCluster, worker processes of one thread each, loopback only")
    with ExitStack() as stack:
        clients = {}
        for workers in (1, 2):
            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       dashboard_address=":0", host="127.0.0.1"))
            clients[workers] = stack.enter_context(Client(cluster))
        start = time.perf_counter()
        overhead(args, clients)
        for name in machine.progress(args.kernel, "kernels"):
            run_kernel(args, clients, name)
        print(f"\n{(time.perf_counter() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()
