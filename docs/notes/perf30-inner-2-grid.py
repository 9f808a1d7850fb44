"""Section inner, round 3 (issue 30): the jam-factor grid behind codegen/jam.py's rule. One kernel per
variant, same operands, same process, interleaved rounds, thread-CPU time; the median (MIN=1: the least)
per variant and its ratio to the best (docs/notes/perf30-inner-2.md).

Variants (VARIANTS, comma-separated): `plain` (no jam), `new` (this round's rule), or factors joined by
dots, each a jammed loop taking the positions the one before left (`4` is round 2's pass, `8.4` a cascade).

    VARIANTS=plain,4,new MIN=1 PYTHONPATH=src:bench python docs/notes/perf30-inner-2-grid.py spmm 0.25 31 \
        uniform,power-law 1,8,64
    ... sddmm 0.25 21 uniform 4,32 d1d0,dense      ... ttm 0.25 21 uniform 4,16      (DTYPE=float32 for SpMM)
"""
import os, sys, time, statistics, gc
import numpy as np
import autosparse as asp
import autosparse.api as api
import autosparse.lower.kernel as LK
import autosparse.pipeline.specialise as S
from autosparse.codegen import jam
from autosparse_bench import kernels as K

FACTORS = os.environ.get("VARIANTS", "plain,4,new").split(",")
RULE = jam._jammed


def fixed(factors):
    """`jam._jammed` as a cascade of `factors` would make it."""
    def jammed(loop):
        row = jam._shape(loop)
        shape, make = (row, jam._row_jammed) if row is not None else (jam._dots(loop), jam._dots_jammed)
        return () if shape is None else tuple(make(shape, f) for f in factors)
    return jammed


def build(expr, formats, operands):
    """Each variant's kernel, specialised for `operands` (the first call lowers) while the variant is patched in."""
    out = {}
    for f in FACTORS:
        jam._jammed = RULE if f in ("new", "plain") else fixed([int(x) for x in f.split(".")])
        LK.jam_loops = (lambda block: block) if f == "plain" else jam.jam_loops
        api._kernels.clear(); api._warm.clear(); S._memo.clear()
        k = asp.compile(expr, formats=formats, num_threads=1)
        k(**operands)
        (loaded,) = S._memo.values()
        assert ("_jam" in loaded.source.source) == (f != "plain" and "complex" not in os.environ.get("DTYPE", "")), f
        out[f] = k
    jam._jammed, LK.jam_loops = RULE, jam.jam_loops
    return out


def run(label, kernels, operands, rounds):
    calls = {f: (lambda k=k: k(**operands)) for f, k in kernels.items()}
    t = {f: [] for f in calls}
    for r in range(rounds):
        order = list(calls.items()); order = order[r % len(order):] + order[:r % len(order)]
        gc.disable()
        for f, c in order:
            s = time.thread_time(); c(); t[f].append(time.thread_time() - s)
        gc.enable()
    med = {f: (min(v) if os.environ.get("MIN") else statistics.median(v)) * 1e3 for f, v in t.items()}
    best = min(med.values())
    print(f"{label:34s} " + " ".join(f"{f}={med[f]:7.3f}({med[f]/best:4.2f})" for f in FACTORS), flush=True)

what, scale, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
if what == "spmm":
    for fam in sys.argv[4].split(","):
        m = K.family_matrix(fam, int(1_000_000 * scale), 10, 0)
        for J in map(int, sys.argv[5].split(",")):
            dt = np.dtype(os.environ.get("DTYPE", "float64"))
            b = rng.random((m.shape[1], J)).astype(dt); m = m.astype(dt)
            ops = {"A": asp.Tensor.from_scipy(m), "B": asp.Tensor.from_numpy(b)}
            ks = build("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"}, ops)
            run(f"spmm {fam} x{scale} J={J}", ks, ops, rounds)
elif what == "sddmm":
    expr = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"
    for layout in sys.argv[6].split(","):
        for fam in sys.argv[4].split(","):
            m = K.family_matrix(fam, int(1_000_000 * scale), 50, 0)
            for k in map(int, sys.argv[5].split(",")):
                c, d = rng.random((m.shape[0], k)), rng.random((k, m.shape[1]))
                ops = {"B": asp.Tensor.from_scipy(m), "C": asp.Tensor.from_numpy(c),
                       "D": asp.Tensor.from_numpy(d).to_format(layout)}
                ks = build(expr, {"B": "csr", "C": "dense", "D": layout, "A": "csr"}, ops)
                run(f"sddmm {fam} x{scale} k={k} D={layout}", ks, ops, rounds)
else:
    (shape, nnz) = K.SIZES["full"]["tensor"]
    for fam in sys.argv[4].split(","):
        t = K.family_tensor(fam, tuple(int(s * scale ** (1/3)) for s in shape), int(nnz * scale), 0)
        t3 = K.Tensor3.of(t)
        for rank in map(int, sys.argv[5].split(",")):
            if what == "ttm":
                ops = {"B": t3.ours, "C": asp.Tensor.from_numpy(rng.random((t3.shape[2], rank)))}
                ks = build("A(i,j,l) = B(i,j,k) * C(k,l)", {"B": "csf", "C": "dense", "A": "dense"}, ops)
            else:
                ops = {"B": t3.ours, "C": asp.Tensor.from_numpy(rng.random((t3.shape[1], rank))),
                       "D": asp.Tensor.from_numpy(rng.random((t3.shape[2], rank)))}
                ks = build("A(i,l) = B(i,j,k) * C(j,l) * D(k,l)",
                           {"B": "csf", "C": "dense", "D": "dense", "A": "dense"}, ops)
            run(f"{what} {fam} x{scale} rank={rank}", ks, ops, rounds)
