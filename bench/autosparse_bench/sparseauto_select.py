"""SparseAuto on real inputs: the schedule `front.select` picks for each of Dias et al.'s eight kernels,
against the default linear schedule (`schedule=None`) and against the asymptotic autoscheduler's pick,
timed on the same data; then the §3.1 motivating TTMc cases.

    autosparse bench sparseauto                       # every kernel and input, then the cases
    autosparse bench sparseauto --kernel 1 4 --no-cases --timeout 10

Inputs per kernel: two synthetic sparse operands with the dimension ratios and densities of the paper's
datasets (Table 1), scaled to at most --max-nnz nonzeros (uniform coordinates), and the shipped real
matrices (kernels 1–4) or tensors (5–8) of ../shared/data. Dense factors have --rank columns (16 for the
tensor kernels' modes, as in the paper's TTMc runs). Every contender runs in a forked child
(`asymptotic_select.in_child`): a default schedule that passes --timeout is reported as a lower bound.
Times are medians after a warm-up call; results are checked against the selected schedule's.

The cases (§3.1, TTMc with the sizes of cases ①–④; the paper's sparsities for ① and ② are 10× what its
own cost ratios imply, so 0.008 and 0.002 are used, and I is scaled so B has at most --max-nnz
nonzeros): schedules (a) (no temporary), (b) (a vector over k, fused over l and m) and (d) (a matrix over
j, k fused over l, then a scalar), each timed, beside the model's predicted order.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from itertools import repeat

import numpy as np

import autosparse as asp
from autosparse.autoschedule.sparseauto.runtime import sizes
from autosparse.notation import accesses, parse

from . import quick_sizes
from .asymptotic_select import DATA, agrees, candidate_formats, compiled_for, in_child, timed
from .records import Records, add_option, source_hash
from .sparseauto_counts import KERNELS, NAMES, front

# name: (shape, nonzeros) of the paper's datasets (Table 1) that the synthetic inputs scale.
MATRICES = {"bcsstk17": ((10974, 10974), 428650), "scircuit": ((170998, 170998), 958936)}
TENSORS = {"nell-2": ((12092, 9184, 28818), 76879419), "vast-2015-mc1": ((165427, 11374, 2), 26021945)}
REAL_MATRICES = ("bcsstk13", "CollegeMsg", "facebook_combined", "Wiki-Vote")
REAL_TENSORS = ("yelp", "CollegeMsg", "med")
TTMC = "A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)"
CASES = {  # I, J, K, L, M, N, sparsity of B (§3.1)
    "①": (1800, 800, 1000, 64, 16, 32, 0.008), "②": (1800, 1600, 2000, 64, 16, 32, 0.002),
    "③": (1, 200, 4000, 256, 200, 196, 0.002), "④": (265, 1207, 479, 251, 234, 42, 0.0033)}
FIGURE_2 = {"(a)": "reorder(l, m, n, i, j, k)", "(b)": "reorder(l, m, n, i, j, k); loopfuse(3, true, [])",
            "(d)": "reorder(l, m, n, i, j, k); loopfuse(2, true, []); reorder(m, k, n, j, path=[1]); "
                   "loopfuse(2, true, [1])"}


def scaled(shape, nnz, max_nnz):
    """The shape with every mode shrunk by one factor so that, at the same density, the nonzeros fit
    `max_nnz` (modes of 2 or fewer stay)."""
    if nnz <= max_nnz:
        return shape, nnz
    big = [d for d in shape if d > 2]
    factor = (nnz / max_nnz) ** (1 / len(big))
    new = tuple(max(2, int(d / factor)) if d > 2 else d for d in shape)
    density = nnz / np.prod(shape, dtype=float)
    return new, int(density * np.prod(new, dtype=float))


def uniform(rng, shape, nnz):
    size = int(np.prod(shape, dtype=np.int64))
    flat = np.unique(rng.integers(0, size, int(nnz * 1.02) + 16, dtype=np.int64))[:nnz]
    return np.stack(np.unravel_index(np.sort(flat), shape)), 1.0 - rng.random(len(flat))


def operands(number, rng, sparse, rank):
    """Kernel `number`'s operands around the sparse B (coordinates, values, shape): dense factors random,
    every index not of B ranging over `rank`."""
    expression, formats = KERNELS[number]
    coords, values, shape = sparse
    b = next(a for a in accesses(parse(expression).rhs) if a.tensor == "B")
    extents = {i.name: n for i, n in zip(b.indices, shape)}
    found = {"B": asp.Tensor.from_coo(coords, values, shape, format=formats["B"])}
    for access in accesses(parse(expression).rhs):
        if access.tensor != "B":
            found[access.tensor] = rng.random(tuple(extents.setdefault(i.name, rank) for i in access.indices))
    return found


def inputs(number, rng, args):
    matrix = len(next(a for a in accesses(parse(KERNELS[number][0]).rhs) if a.tensor == "B").indices) == 2
    rank = args.rank if matrix else args.mode_rank
    for name, (shape, nnz) in (MATRICES if matrix else TENSORS).items():
        shape, nnz = scaled(shape, nnz, args.max_nnz)
        coords, values = uniform(rng, shape, nnz)
        yield f"{name}-like {'×'.join(map(str, shape))}", operands(number, rng, (coords, values, shape), rank)
    if args.no_real:
        return
    for name in (REAL_MATRICES if matrix else REAL_TENSORS):
        tensor = asp.read(DATA / f"{name}.{'mtx' if matrix else 'tns'}.gz")
        coords, values = tensor.to_coo()
        yield name, operands(number, rng, (coords, values, tensor.shape), rank)


def measure(kernel, ready, timeout):
    """(`timed`'s outcome, None when cut off or failed; the hash of the kernel's source), the kernel
    compiled here so that the child's time limit covers the run only."""
    compiled_for(kernel, ready)
    outcome = in_child(lambda: timed(kernel, ready), timeout + 30)
    return (outcome if isinstance(outcome, dict) else None), source_hash(kernel)


def fmt(outcome, timeout):
    return f"{outcome['seconds']:.4g}" if outcome else f"> {timeout:g}"


def run_kernels(args):
    print("| # | kernel | input | nnz(B) | default s | selected s | speedup | asymptotic pick s | selected / asymptotic | "
          "select ms | selected schedule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)  # before workers fork
    workers = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    with workers or nullcontext():
        list((workers.map if workers else map)(run_kernel, args.kernel, repeat(args)))


def run_kernel(number, args):
    """Kernel `number`'s rows, printed as they are measured (inputs drawn from a generator of the
    kernel's own, so a row does not depend on which worker ran which kernel)."""
    rng = np.random.default_rng(number)
    expression, formats = KERNELS[number]
    candidates = front(number)
    asymptotic = asp.autoschedule(expression, formats=formats, time_limit=args.search_limit)
    for label, found in inputs(number, rng, args):
        sources = {}
        start = time.perf_counter()
        chosen = candidates.select(**found)
        select_ms = 1e3 * (time.perf_counter() - start)
        picked = asp.compile(expression, formats=formats, schedule=chosen)
        selected, sources["selected"] = measure(picked, found, args.timeout)
        default, sources["default schedule"] = measure(asp.compile(expression, formats=formats, num_threads=1), found,
                                                       args.timeout)  # one thread, as the candidates
        other = None  # the asymptotic search may take no program within its limit
        if len(asymptotic):
            theirs = asymptotic.select(**found)
            ready = {n: t.to_format(theirs.formats[n]) if n in theirs.transposes else t for n, t in found.items()}
            other, sources["asymptotic pick"] = measure(
                asp.compile(expression, formats=candidate_formats(formats, theirs), schedule=theirs), ready,
                args.timeout)
        for name, outcome in (("default", default), ("asymptotic", other)):
            if outcome and selected and not agrees(outcome, selected):
                print(f"FAILED kernel {number} {label}: the {name} schedule's result differs", flush=True)
        for contender, outcome, extra in (("default schedule", default, {"limit": args.timeout}),
                                          ("selected", selected, {"schedule": str(chosen)}),
                                          ("asymptotic pick", other, {})):
            if contender != "asymptotic pick" or len(asymptotic):
                args.records.timing(f"{number} {NAMES[number]}", label, contender,
                                    outcome["seconds"] if outcome else None,
                                    role="ours" if contender == "selected" else "variant",
                                    status="" if outcome else "timeout", nnz=found["B"].nnz,
                                    source=sources[contender], **extra)
        speedup = (f"{default['seconds'] / selected['seconds']:.3g}×" if default and selected else
                   f"> {args.timeout / selected['seconds']:.3g}×" if selected else "—")
        versus = f"{selected['seconds'] / other['seconds']:.2f}" if other and selected else "—"
        theirs_text = fmt(other, args.timeout) if len(asymptotic) else "no candidate"
        print(f"| {number} | {NAMES[number]} | {label} | {found['B'].nnz:,} | {fmt(default, args.timeout)} | "
              f"{fmt(selected, args.timeout)} | {speedup} | {theirs_text} | {versus} | "
              f"{select_ms:.1f} | `{chosen}` |", flush=True)


def run_cases(args):
    print("\n| case | I×J×K, L,M,N | nnz(B) | (a) s | (b) s | (d) s | measured order | model's order | selected |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    rng = np.random.default_rng(1)
    candidates = asp.autoschedule(TTMC, formats={"B": "dss"}, model="sparseauto")
    compute = candidates.search.compute  # the expression as SparseAuto's search read it
    for case, (i, j, k, l, m, n, sparsity) in CASES.items():
        nnz = int(sparsity * i * j * k)
        if nnz > args.max_nnz:
            i = max(1, int(i * args.max_nnz / nnz))
            nnz = int(sparsity * i * j * k)
        coords, values = uniform(rng, (i, j, k), nnz)
        found = {"B": asp.Tensor.from_coo(coords, values, (i, j, k), format="dss"), "C": rng.random((i, l)),
                 "D": rng.random((j, m)), "E": rng.random((k, n))}
        extents = dict(zip("ijklmn", (i, j, k, l, m, n)))
        values_at = sizes({f.tensor: f for f in compute.factors}, candidates.formats, found, extents)
        times, model, sources = {}, {}, {}
        for name, schedule in FIGURE_2.items():
            kernel = asp.compile(TTMC, formats={"B": "dss"}, schedule=schedule)
            times[name], sources[name] = measure(kernel, found, args.timeout)
            big = _big_of(kernel)
            model[name] = big.time.evaluate(values_at)
        finished = sorted((s for s in times if times[s]), key=lambda s: times[s]["seconds"])
        cut = [s for s in times if not times[s]]
        measured = " < ".join(finished) + (f" (then {', '.join(cut)}: > {args.timeout:g} s)" if cut else "")
        predicted = " < ".join(sorted(model, key=model.get))
        chosen = candidates.select(**found)
        for name in FIGURE_2:
            args.records.timing("TTMc §3.1", f"case {case}", f"schedule {name}",
                                times[name]["seconds"] if times[name] else None,
                                role="variant", status="" if times[name] else "timeout", nnz=nnz,
                                predicted=model[name], source=sources[name])
        print(f"| {case} | {i}×{j}×{k}, {l},{m},{n} | {nnz:,} | " + " | ".join(fmt(times[s], args.timeout)
                                                                              for s in FIGURE_2)
              + f" | {measured} | {predicted} | `{chosen}` |", flush=True)


def _big_of(kernel):
    """The symbolic costs of a kernel's CIN read as a branched iteration graph."""
    from autosparse.schedule.big_cin import formats_of, to_big
    from autosparse.autoschedule.sparseauto.cost import costs

    big, found = to_big(kernel.cin, "costs")
    return costs(big, formats_of(found))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", type=int, nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--max-nnz", type=float, default=5e6)
    parser.add_argument("--rank", type=int, default=32, help="columns of the matrix kernels' dense factors")
    parser.add_argument("--mode-rank", type=int, default=16, help="the tensor kernels' dense modes")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--search-limit", type=float, default=60.0, help="seconds for the asymptotic search")
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--no-cases", action="store_true")
    parser.add_argument("--cases-only", action="store_true")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=1,
                        help="worker processes measuring kernels side by side (the cases run after them)")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: kernels 1, 4 and 6 at 20,000 nonzeros, no real data nor §3.1 cases (their "
                             "dense modes alone take seconds), 5 s limits")
    add_option(parser)
    args = parser.parse_args(argv)
    quick_sizes(parser, args, kernel=[1, 4, 6], max_nnz=2e4, no_real=True, no_cases=True, timeout=5.0,
                search_limit=5.0)
    args.records = Records(args.json)  # forked workers append to the same file
    if not args.cases_only:
        run_kernels(args)
    if not args.no_cases:
        run_cases(args)


if __name__ == "__main__":
    main()
