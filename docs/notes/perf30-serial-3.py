"""The measurements of docs/notes/perf30-serial-3.md (issue 30, round 4, section "serial"): MTTKRP on `med`,
SpMV on banded. Every figure is thread-CPU time of calls in one process, contenders interleaved (each
round starts one later), medians.

    cd /work/wt-serial && AUTOSPARSE_CACHE_DIR=/tmp/cache-serial \
        PYTHONPATH=/work/wt-serial/src:/work/wt-serial/bench python docs/notes/perf30-serial-3.py PART [ROUNDS]

PART is one of
  warmcold  MTTKRP on med, ours and the C reference, each call timed warm (right after a call of its own)
            and cold (right after 64 MiB of other memory was written): the spread between processes
  switches  the same two, single calls, split by whether the call was context-switched (getrusage)
  jam       ours with the jam rule as it is, with rows under NARROW positions skipping both jammed
            loops, and with no jam: results checked equal bit for bit, then timed
  flags     machine code only: our generated C and mttkrp.c, each built with autosparse's flags and
            with the bench's reference flags, called through ctypes on the same arrays; ours through
            its Python call beside them
  spmv      SpMV on banded: our generated C as it is and without its per-row zeroing store, and spmv.c
"""

from __future__ import annotations

import ctypes
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import autosparse as asp
import autosparse.lower.kernel as lowered
import autosparse.pipeline.specialise as specialised
from autosparse.codegen import jam
from autosparse.codegen.c_ast import Block, If, ge
from autosparse.runtime.compiler import FLAGS as AUTOSPARSE_FLAGS
from autosparse_bench import data
from autosparse_bench import kernels as K

RANK = 16
BENCH_FLAGS = list(K.Reference.FLAGS)
OURS_FLAGS = list(AUTOSPARSE_FLAGS)
BUILD = Path(tempfile.mkdtemp(prefix="perf30-serial-"))


def med_case():
    t = K.Tensor3.of(data.load_tensor(Path("/work/shared/data/med.tns.gz")))
    return t, K.mttkrp_case("med", t, RANK, np.random.default_rng(0), K.Reference())


def peer(case, name):
    return next(p.call for p in case.peers if p.name == name)


def rotated(calls: dict, rounds: int, before=None) -> dict[str, list[float]]:
    """`rounds` single-call samples of each call, round-robin; `before(name)` runs untimed before each."""
    names, samples = list(calls), {name: [] for name in calls}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if before:
                before(name)
            start = time.thread_time()
            calls[name]()
            samples[name].append(time.thread_time() - start)
    return samples


def show(samples: dict[str, list[float]], base: str | None = None) -> None:
    reference = statistics.median(samples[base]) if base else None
    for name, taken in samples.items():
        median = statistics.median(taken)
        ratio = f"  {base} / it {reference / median:5.2f}" if base else ""
        print(f"{name:52s} median {median * 1e3:6.3f} ms  min {min(taken) * 1e3:6.3f}{ratio}")


def library(source: Path, flags: list[str], name: str) -> ctypes.CDLL:
    target = BUILD / f"{name}.so"
    subprocess.run(["cc", *flags, "-o", str(target), str(source)], check=True)
    return ctypes.CDLL(str(target))


def warmcold(rounds: int) -> None:
    t, case = med_case()
    kernel = asp.compile(case.expression, formats=case.formats, num_threads=1)
    calls = {"ours": lambda: kernel(**case.operands), "C reference": peer(case, "C reference")}
    junk, sink = np.ones(8 * 2**20), np.empty(8 * 2**20)
    timed = {f"{name}, {state}": call for name, call in calls.items() for state in ("warm", "cold")}

    def before(name):
        if name.endswith("cold"):
            np.copyto(sink, junk)  # 64 MiB written: what another contender or the other core's work leaves
        else:
            timed[name]()

    show(rotated(timed, rounds, before))


def switches(rounds: int) -> None:
    t, case = med_case()
    kernel = asp.compile(case.expression, formats=case.formats, num_threads=1)
    calls = {"ours": lambda: kernel(**case.operands), "C reference": peer(case, "C reference")}
    split = {name: ([], []) for name in calls}
    for r in range(rounds):
        for name in list(calls)[r % 2:] + list(calls)[:r % 2]:
            before = resource.getrusage(resource.RUSAGE_THREAD)
            start = time.thread_time()
            calls[name]()
            taken = time.thread_time() - start
            after = resource.getrusage(resource.RUSAGE_THREAD)
            switched = after.ru_nivcsw + after.ru_nvcsw > before.ru_nivcsw + before.ru_nvcsw
            split[name][switched].append(taken)
    for name, (quiet, moved) in split.items():
        for label, taken in (("not switched", quiet), ("context-switched", moved)):
            if taken:
                print(f"{name:12s} {label:17s} {len(taken):4d} calls  median {statistics.median(taken) * 1e3:6.3f} ms")


def _guarded(loop, plain=jam._jammed):
    """The jam with rows of fewer than NARROW positions skipping both jammed loops (one test, not two)."""
    out = plain(loop)
    return (If(ge(out[0].condition.left, jam.NARROW), Block(out)),) if out else out


def jam_rule(rounds: int) -> None:
    t, case = med_case()

    def build(variant):
        specialised._memo.clear()
        saved = lowered.jam_loops, jam._jammed
        if variant == "no jam":
            lowered.jam_loops = lambda block: block
        elif variant == "rows under NARROW skip the jam":
            jam._jammed = _guarded
        try:
            return asp.compile(case.expression, formats=case.formats, num_threads=1)
        finally:
            lowered.jam_loops, jam._jammed = saved

    kernels = {v: build(v) for v in ("as it is", "rows under NARROW skip the jam", "no jam")}
    results = [np.asarray(k(**case.operands)) for k in kernels.values()]
    assert all(np.array_equal(r, results[0]) for r in results), "the variants differ"
    show(rotated({v: (lambda k=k: k(**case.operands)) for v, k in kernels.items()}, rounds), "as it is")


def flags(rounds: int) -> None:
    t, case = med_case()
    kernel = asp.compile(case.expression, formats=case.formats, num_threads=1)
    kernel(**case.operands)
    (I, J, Kd), levels = t.shape, t.arrays()
    cm, dm = (np.ascontiguousarray(case.operands[n].to_numpy()) for n in "CD")
    ours = BUILD / "ours.c"
    ours.write_text(kernel.source)
    out = np.zeros((I, RANK))
    dims = (ctypes.c_int64 * 4)(I, J, Kd, RANK)
    sizes, counters = (ctypes.c_int64 * 10)(), (ctypes.c_int64 * 1)()
    args = (ctypes.c_void_p * 10)(*[a.value for a in levels], cm.ctypes.data, dm.ctypes.data, out.ctypes.data)
    storage = t.ours._storage
    mine = [a.ctypes.data for level in storage.levels for a in level.values()] + [storage.vals.ctypes.data]
    mine += [case.operands[n]._storage.vals.ctypes.data for n in "CD"]
    fresh = []

    def own():
        fresh[:] = [np.zeros((I, RANK))]
        return (ctypes.c_void_p * 10)(*mine, fresh[0].ctypes.data)
    calls = {}
    for label, chosen in (("autosparse's flags", OURS_FLAGS + ["-shared"]), ("reference flags", BENCH_FLAGS)):
        tag = label.split()[0].strip("'s")
        f = library(ours, chosen, f"ours-{tag}").autosparse_kernel
        calls[f"ours C, {label}"] = lambda f=f: (out.fill(0), f(args, dims, sizes, counters))
        if tag == "autosparse":  # the arrays its Python call passes: the Tensors' own, and a fresh result
            calls["ours C, autosparse's flags, on its Python call's arrays"] = \
                lambda f=f: f(own(), dims, sizes, counters)
        g = library(K.REFERENCE / "mttkrp.c", chosen, f"reference-{tag}").mttkrp
        g.restype = None
        calls[f"reference C, {label}"] = lambda g=g: (out.fill(0),
                                                      g(RANK, *levels, K.ptr(cm), K.ptr(dm), K.ptr(out)))
    calls["ours, its Python call"] = lambda: kernel(**case.operands)
    expected = np.asarray(kernel(**case.operands))
    for name, call in calls.items():
        result = call()
        result = result if isinstance(result, np.ndarray) else fresh[0] if "Python call's" in name else out
        assert np.allclose(result, expected), name
    show(rotated(calls, rounds, before=lambda name: calls[name]()), "reference C, reference flags")


def spmv(rounds: int) -> None:
    m = K.family_matrix("banded", 2_000_000, 10, 0)
    x = np.random.default_rng(0).random(m.shape[1])
    rows = m.shape[0]
    source = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "d", "y": "d"}, num_threads=1).source
    store = "memset(y_vals + i_ * 1, 0, 1 * sizeof(double));"
    assert store in source
    dims, sizes, counters = (ctypes.c_int64 * 2)(rows, m.shape[1]), (ctypes.c_int64 * 5)(), (ctypes.c_int64 * 1)()
    calls = {}
    for label, text in (("as generated", source), ("without the zeroing store", source.replace(store, ""))):
        path = BUILD / f"spmv-{len(calls)}.c"
        path.write_text(text)
        f = library(path, OURS_FLAGS + ["-shared"], path.stem).autosparse_kernel

        def call(f=f):
            y = np.empty(rows)
            arrays = (m.indptr, m.indices, m.data, x, y)
            f((ctypes.c_void_p * 5)(*(a.ctypes.data for a in arrays)), dims, sizes, counters)
            return y
        calls[f"ours, {label}"] = call
    reference = K.Reference().function("spmv", "spmv")

    def spmv_c():
        y = np.empty(rows)
        reference(rows, K.ptr(m.indptr), K.ptr(m.indices), K.ptr(m.data), K.ptr(x), K.ptr(y))
        return y
    calls["C reference"] = spmv_c
    for call in calls.values():
        assert np.array_equal(call(), spmv_c())
    show(rotated(calls, rounds, before=lambda name: calls[name]()), "C reference")


PARTS = {"warmcold": warmcold, "switches": switches, "jam": jam_rule, "flags": flags, "spmv": spmv}

if __name__ == "__main__":
    PARTS[sys.argv[1]](int(sys.argv[2]) if len(sys.argv) > 2 else 31)
