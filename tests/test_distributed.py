"""Distributed evaluation on a LocalCluster of two worker processes (loopback only): the kernels of
the issue against the single-process results, the task graph, a worker killed mid-run, and errors."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import autosparse as asp
from conftest import densified
from autosparse.distributed import Partitioned, Resident, evaluate_planned, partition
from autosparse.distributed.evaluate import INLINE_BYTES
from autosparse.tensor.slicing import cut
from kernel_cases import reference, tolerance
from test_kernel_hypothesis import make_operands, problems

distributed = pytest.importorskip("distributed")

WORKERS = 2


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1", worker_class=distributed.Nanny)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def _csr(n, m, density, seed):
    return asp.Tensor.from_scipy(sp.random(n, m, density, format="csr", random_state=seed))


def _tensor(shape, density, seed, fmt="sss"):
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape) * density)
    coords = np.vstack([rng.integers(0, n, count) for n in shape])
    return asp.Tensor.from_coo(coords, rng.random(count), shape, format=fmt)


def _kind(result) -> tuple:
    """What a distributed result must share with the local one: its type, format (a dense one is an
    array) and shape."""
    return type(result), getattr(result, "format", None), result.shape


def _chunk_tasks(client, run):
    """The chunk tasks a run put on the cluster."""
    with distributed.get_task_stream(client) as stream:
        result, plan = run()
    return result, plan, [t for t in stream.data if str(t["key"]).startswith("autosparse-chunk")]


rng = np.random.default_rng(7)
CASES = {
    "SpMV": ("y(i) = A(i,j) * x(j)", "d", lambda: {"A": _csr(300, 200, 0.05, 1), "x": rng.random(200)}),
    "SpGEMM": ("C(i,j) = A(i,k) * B(k,j)", "csr",
               lambda: {"A": _csr(200, 150, 0.05, 2), "B": _csr(150, 120, 0.05, 3)}),
    "SDDMM": ("A(i,j) = B(i,j) * C(i,k) * D(j,k)", "csr",
              lambda: {"B": _csr(120, 90, 0.1, 4), "C": rng.random((120, 8)), "D": rng.random((90, 8))}),
    "MTTKRP": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", "dense",
               lambda: {"B": _tensor((40, 30, 20), 0.02, 5), "C": rng.random((30, 6)), "D": rng.random((20, 6))}),
    "TTM": ("A(i,j,k) = B(i,j,l) * C(k,l)", "dds",
            lambda: {"B": _tensor((30, 20, 25), 0.03, 6), "C": rng.random((10, 25))}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernels_equal_the_single_process_result(client, name):
    expression, fmt, make = CASES[name]
    operands = make()
    local = asp.evaluate(expression, format=fmt, **operands)
    result, plan, tasks = _chunk_tasks(client, lambda: evaluate_planned(expression, client, fmt, **operands))
    assert plan.chunks >= WORKERS
    assert len(tasks) == plan.chunks  # one task per chunk
    assert _kind(result) == _kind(local)
    np.testing.assert_allclose(densified(result), densified(local), rtol=1e-12, atol=1e-12)


def test_a_scipy_coo_operand_gives_scipys_values(client):
    """A scipy coo_matrix, its rows out of order and a coordinate repeated, split among the workers."""
    gen = np.random.default_rng(21)
    row, col = gen.integers(0, 90, 400), gen.integers(0, 70, 400)
    matrix = sp.coo_matrix((gen.random(403), (np.append(row, row[:3]), np.append(col, col[:3]))), shape=(90, 70))
    x = gen.random(70)
    result, plan = evaluate_planned("y(i) = A(i,j) * x(j)", client, "d", A=matrix, x=x)
    assert plan.chunks >= WORKERS
    np.testing.assert_allclose(result, matrix @ x, rtol=1e-12)


@pytest.mark.parametrize("schedule", [None, "auto"])
def test_partitioned_operands_and_schedules(client, schedule):
    a, b = _csr(160, 160, 0.04, 8), _csr(160, 160, 0.04, 9)
    local = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", format="csr", A=a, B=b)
    result, plan = evaluate_planned("C(i,j) = A(i,k) * B(k,j)", client, "csr", schedule, A=partition(a, 5), B=b)
    assert plan.chunks == 5
    np.testing.assert_allclose(densified(result), densified(local), rtol=1e-12)


def test_chunks_in_files_are_read_by_the_workers(client, tmp_path):
    whole = _tensor((50, 20, 10), 0.05, 18, fmt="coo")
    for k, (b, e) in enumerate([(0, 20), (20, 21), (21, 50)]):
        asp.write(tmp_path / f"part{k}.tns", cut(whole, 0, b, e))
    c, d = rng.random((20, 4)), rng.random((10, 4))
    local = asp.evaluate("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", B=whole, C=c, D=d)
    chunks = Partitioned.from_directory(tmp_path, format="sss")
    result, plan = evaluate_planned("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", client, B=chunks, C=c, D=d)
    assert plan.bounds == (0, 20, 21, 50)
    np.testing.assert_allclose(densified(result), densified(local), rtol=1e-12)


def test_persisted_chunks_stay_on_the_workers(client):
    a = _csr(400, 300, 0.02, 19)
    held = partition(a, 4).persist(client)
    assert all(isinstance(c, Resident) for c in held.chunks) and held.nnz == a.nnz
    for seed in (1, 2):  # the second call ships x alone
        x = np.random.default_rng(seed).random(300)
        result, plan = evaluate_planned("y(i) = A(i,j) * x(j)", client, A=held, x=x)
        np.testing.assert_allclose(densified(result), densified(a) @ x, rtol=1e-12)
    assert plan.chunks == 4
    np.testing.assert_array_equal(held.gather().to_numpy(), a.to_numpy())


def test_results_left_on_the_workers_feed_the_next_evaluation(client):
    a = _csr(500, 500, 0.01, 21)
    x = rng.random(500)
    held = partition(a, 2).persist(client)
    y = asp.distributed.evaluate("y(i) = A(i,j) * x(j)", client, A=held, x=x, gather=False)
    assert isinstance(y, Partitioned) and all(isinstance(c, Resident) for c in y.chunks)
    assert y.bounds == held.bounds and y.shape == (500,)
    z, plan = evaluate_planned("z(i) = A(i,j) * y(j)", client, A=held, y=y)  # y joined on a worker
    assert plan.broadcast == ("y",)
    expected = a.to_numpy() @ (a.to_numpy() @ x)
    np.testing.assert_allclose(densified(z), expected, rtol=1e-12)
    np.testing.assert_allclose(y.gather().to_numpy(), a.to_numpy() @ x, rtol=1e-12)
    c = asp.distributed.evaluate("C(j,k) = A(i,j) * A(i,k)", client, "ds~", index="i", parts=3, A=a, gather=False)
    assert len(c.chunks) == 1 and c.format == asp.Format("ds~")  # a sum is one chunk, in the format asked
    np.testing.assert_allclose(c.gather().to_numpy(), a.to_numpy().T @ a.to_numpy(), rtol=1e-12)
    assert asp.distributed.evaluate("s() = a(i) * b(i)", client, a=x, b=x, gather=False) == pytest.approx(x @ x)


def test_contractions_over_the_split_index_add_up_in_a_tree(client):
    a = _csr(300, 40, 0.1, 10)
    local = asp.evaluate("C(j,k) = A(i,j) * A(i,k)", format="csr", A=a)
    result, plan = evaluate_planned("C(j,k) = A(i,j) * A(i,k)", client, "csr", parts=5, index="i", A=a)
    assert plan.combine.value == "sum" and plan.chunks == 5
    np.testing.assert_allclose(densified(result), densified(local), rtol=1e-12)
    x = rng.random(1000)
    dot, _ = evaluate_planned("s() = a(i) * b(i)", client, parts=4, a=x, b=x)
    assert dot == pytest.approx(float(x @ x), rel=1e-12)
    shifted, plan = evaluate_planned("s() = sum(i, a(i) + 2)", client, parts=3, a=x)  # 2 per i, wherever i falls
    assert plan.chunks == 3 and shifted == pytest.approx(float(x.sum() + 2000), rel=1e-12)
    once, plan = evaluate_planned("s() = a(i) + 2", client, parts=3, a=x)  # Σ a + 2 (TACO): not split
    assert plan.chunks == 1 and once == pytest.approx(float(x.sum() + 2), rel=1e-12)
    unordered, plan = evaluate_planned("C(j,k) = A(i,j) * A(i,k)", client, "ds~", parts=3, index="i", A=a)
    assert plan.chunks == 3 and unordered.format == asp.Format("ds~")
    np.testing.assert_allclose(densified(unordered), densified(local), rtol=1e-12)


def test_scoped_sums_on_the_cluster(client):
    """y = A·x + z splits its rows, never j (summed over part of the right side: z would be added once
    per chunk); asking for j is an error."""
    a, x, z = _csr(90, 70, 0.1, 12), rng.random(70), rng.random(90)
    expected = a.to_scipy() @ x + z
    result, plan = evaluate_planned("y(i) = A(i,j) * x(j) + z(i)", client, "dense", A=a, x=x, z=z)
    assert plan.index.name == "i"
    np.testing.assert_allclose(densified(result), expected, rtol=1e-12)
    with pytest.raises(asp.AutosparseError, match="summed over part of it"):
        evaluate_planned("y(i) = A(i,j) * x(j) + z(i)", client, "dense", index="j", A=a, x=x, z=z)


def test_a_tensor_read_two_ways_squares_on_the_cluster(client):
    a = _csr(300, 300, 0.02, 20)
    local = asp.evaluate("C(i,j) = A(i,k) * A(k,j)", format="csr", A=a)
    result, plan = evaluate_planned("C(i,j) = A(i,k) * A(k,j)", client, "csr", A=a)
    assert plan.chunks == WORKERS and plan.broadcast == ("A1",)
    np.testing.assert_allclose(densified(result), densified(local), rtol=1e-12)


def test_empty_and_single_row_inputs(client):
    empty = asp.Tensor.from_coo(np.zeros((2, 0), int), [], (5, 4), format="csr")
    result, _ = evaluate_planned("y(i) = A(i,j) * x(j)", client, A=empty, x=np.ones(4))
    np.testing.assert_array_equal(densified(result), np.zeros(5))
    one = _csr(1, 6, 0.9, 11)
    result, plan = evaluate_planned("C(i,j) = A(i,k) * B(k,j)", client, "csr", A=one, B=_csr(6, 3, 0.9, 12))
    assert plan.chunks == 1  # one row cannot be cut in two
    np.testing.assert_allclose(densified(result), densified(one) @ densified(_csr(6, 3, 0.9, 12)))


def test_each_worker_builds_a_kernel_once(client):
    from autosparse.distributed import tasks

    operands = {"A": _csr(100, 100, 0.05, 13), "x": rng.random(100)}
    evaluate_planned("y(i) = A(i,j) * x(j)", client, parts=6, **operands)
    built = client.run(tasks.kernels_built)
    evaluate_planned("y(i) = A(i,j) * x(j)", client, parts=6, **operands)
    assert client.run(tasks.kernels_built) == built


def test_chunk_errors_are_the_local_exceptions(client):
    operands = {"A": _csr(400, 400, 0.01, 14), "B": _csr(400, 400, 0.01, 15)}
    client.run(asp.set_memory_limit, 1000)  # a dense result of a chunk would pass it on the workers only
    try:
        with pytest.raises(asp.MemoryLimitError, match="dense result"):
            evaluate_planned("C(i,j) = A(i,k) * B(k,j)", client, "dense", **operands)
    finally:
        client.run(asp.set_memory_limit, None)


class _Stall(distributed.WorkerPlugin):
    """Holds each chunk task a second before it runs, so that a test can kill its worker meanwhile."""

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith("autosparse-chunk"):
            time.sleep(1.0)


def test_a_worker_killed_mid_run_does_not_change_the_answer(client):
    # B passes INLINE_BYTES: it reaches the workers as a task's result, which a lost worker's copy needs
    operands = {"A": _csr(2000, 2000, 0.002, 16), "B": _csr(2000, 2000, 0.04, 17)}
    assert operands["B"].nbytes > INLINE_BYTES
    local = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", format="csr", **operands)
    pids = client.run(os.getpid)
    client.register_plugin(_Stall(), name="stall")
    outcome = {}

    def run():
        outcome["result"], outcome["plan"] = evaluate_planned("C(i,j) = A(i,k) * B(k,j)", client, "csr", parts=6,
                                                              **operands)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:
            busy = {w: keys for w, keys in client.processing().items()
                    if any(str(k).startswith("autosparse-chunk") for k in keys)}
            victim = next(iter(busy), None)
            time.sleep(0.05)
        assert victim is not None, "no chunk task was ever seen running"
        os.kill(pids[victim], signal.SIGKILL)
        assert thread.is_alive()  # killed mid-run
    finally:
        thread.join(120)
        client.unregister_worker_plugin("stall")
    assert not thread.is_alive() and "result" in outcome
    np.testing.assert_allclose(densified(outcome["result"]), densified(local), rtol=1e-12)
    client.wait_for_workers(WORKERS, timeout=60)


@pytest.mark.parametrize("error", [asp.MemoryLimitError("m"), asp.ShapeError("s"), asp.FormatError("f"),
                                   asp.ScheduleError("r"), asp.ParseError("p", "y(i) = ", 7),
                                   asp.CompileError("c", "int f;", ("cc",), "out")])
def test_errors_cross_processes_as_themselves(error):
    from distributed.protocol.pickle import dumps, loads

    back = loads(dumps(error))
    assert type(back) is type(error) and str(back) == str(error)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                  HealthCheck.function_scoped_fixture])
@given(problem=problems(), parts=st.integers(2, 4))
def test_random_expressions_match_numpy_or_refuse_as_locally(client, problem, parts):
    statement, extents, formats, value_dtype, index_dtype, density, explicit, seed = problem
    expression = str(statement)
    arrays, operands = make_operands(*problem)
    fmt = formats.get("Z")
    try:
        local = asp.evaluate(expression, format=fmt, **operands)
    except asp.AutosparseError as error:
        with pytest.raises(type(error)):
            evaluate_planned(expression, client, fmt, parts=parts, **operands)
        event("refused locally and on the cluster")
        return
    result, plan = evaluate_planned(expression, client, fmt, parts=parts, **operands)
    rtol, atol = tolerance(np.result_type(*(a.dtype for a in arrays.values())))
    atol *= max(1.0, float(np.max(reference(statement, arrays, extents, magnitude=True), initial=0.0)))
    expected = reference(statement, arrays, extents)
    if statement.lhs.indices:
        assert _kind(result) == _kind(local)
        np.testing.assert_allclose(densified(result), expected, rtol=rtol, atol=atol, err_msg=expression)
    else:
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol, err_msg=expression)
    event(f"matched, {plan.combine.value if plan.index else 'whole'} of {plan.chunks}")


@pytest.mark.parametrize("call,error,message", [
    (lambda: asp.distributed.evaluate("y(i) = A(i,j) * x(j)", client="tcp://nowhere", A=np.eye(2), x=np.ones(2)),
     asp.AutosparseError, "dask.distributed.Client as client=, but found str"),
    (lambda: partition(np.eye(4), 2), asp.FormatError, "autosparse Tensor to partition, but found ndarray"),
    (lambda: partition(asp.Tensor.from_numpy(np.eye(4), "csr"), 0), asp.AutosparseError, "positive integer, but found 0"),
    (lambda: partition(asp.Tensor.from_numpy(np.eye(4), "csr"), 2.5), asp.AutosparseError, "positive integer"),
    (lambda: asp.distributed.prepare("y(i) = A(i,j) * x(j)", parts=0, A=np.eye(2), x=np.ones(2)),
     asp.AutosparseError, "positive integer, but found 0"),
])
def test_wrong_arguments_are_user_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_zero_parts_is_an_error_not_the_default(client):
    with pytest.raises(asp.AutosparseError, match="positive integer, but found 0"):
        evaluate_planned("y(i) = A(i,j) * x(j)", client, parts=0, A=_csr(10, 10, 0.3, 1), x=np.ones(10))
    _, plan = evaluate_planned("y(i) = A(i,j) * x(j)", client, parts=None, A=_csr(10, 10, 0.3, 1), x=np.ones(10))
    assert plan.chunks == WORKERS


def test_a_result_format_left_out_is_inferred_as_locally(client):
    a, b = _csr(120, 100, 0.05, 31), _csr(100, 90, 0.05, 32)
    C, _ = evaluate_planned("C(i,j) = A(i,k) * B(k,j)", client, A=partition(a, 3), B=b)
    assert type(C) is asp.Tensor and C.format == asp.Format("ds~")  # as asp.evaluate infers it
    np.testing.assert_allclose(C.to_numpy(), a.to_numpy() @ b.to_numpy(), rtol=1e-12)
    x = rng.random(100)
    y, _ = evaluate_planned("y(i) = A(i,j) * x(j)", client, A=partition(a, 3), x=x)
    assert type(y) is np.ndarray and y.flags.writeable  # a dense result is an array
    np.testing.assert_allclose(y, a.to_numpy() @ x, rtol=1e-12)
