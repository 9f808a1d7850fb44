"""select's own time: `select.ranking` on one front, first on one input (nothing operand-independent
costed yet), then on a second input of another size class, in CPU seconds; then one full garbage
collection, timed apart (what the ranking leaves for the next collection).

    PYTHONPATH=src:bench python docs/notes/autoschedule-select-speed.py search TTMc 20 /tmp/TTMc-20.pkl
    PYTHONPATH=src:bench python docs/notes/autoschedule-select-speed.py rank /tmp/TTMc-20.pkl --json out.json

`search` runs `asp.autoschedule(model="auto", time_limit=...)` for an autotune case and pickles the front,
so two versions of select rank the same candidates; `rank` times a pickled front and, with --json, writes
(estimate, contender index) per input, to compare two versions' rankings exactly.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import time

import numpy as np

import autosparse as asp
from autosparse.autoschedule import select
from autosparse.notation import accesses


def operands(front, side: int, entries: int, seed: int) -> dict:
    """Uniform random operands: sparse ones with `entries` coordinates over extents `side`, dense
    factor matrices `side` x 16 (tensors of three or more modes `side` in every mode)."""
    rng = np.random.default_rng(seed)
    found = {}
    for access in accesses(front.assignment.rhs):
        fmt = front.formats[access.tensor]
        order = len(access.indices)
        shape = tuple(side if order > 2 or not fmt.is_dense or mode == 0 else 16 for mode in range(order))
        if fmt.is_dense:
            found[access.tensor] = rng.random(shape)
        else:
            found[access.tensor] = asp.Tensor.from_coo(rng.integers(0, side, (order, entries)), rng.random(entries),
                                                       shape, fmt)
    return found


def search(case: str, limit: float, path: str) -> None:
    from autosparse_bench.autotune import CASES

    start = time.perf_counter()
    front = asp.autoschedule(CASES[case].expression, formats=CASES[case].formats, model="auto", time_limit=limit)
    print(f"{case}: {len(front)} candidates in {time.perf_counter() - start:.1f} s")
    with open(path, "wb") as file:
        pickle.dump(front, file)


def rank(path: str, out: str | None) -> None:
    with open(path, "rb") as file:
        front = pickle.load(file)
    tensors = any(len(a.indices) > 2 for a in accesses(front.assignment.rhs))
    inputs = [operands(front, 126 if tensors else 600, 20000, 0), operands(front, 60 if tensors else 2000, 4000, 1)]
    rankings, seconds = [], []
    for given in inputs:
        start = time.process_time()
        rankings.append(select.ranking(front, given))
        seconds.append(time.process_time() - start)
        if len(seconds) == 1:
            start = time.process_time()
            gc.collect()
            collection = time.process_time() - start
    print(f"{len(front)} candidates: first input {seconds[0]:.3f} s, second {seconds[1]:.3f} s, "
          f"a full collection after the first {collection:.3f} s; {select.counts}")
    if out:
        index = {id(cand): n for n, cand in enumerate(select.contenders(front))}
        with open(out, "w") as file:
            json.dump([[[work, index[id(cand)]] for work, cand in ranked] for ranked in rankings], file)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    searching = commands.add_parser("search")
    searching.add_argument("case")
    searching.add_argument("limit", type=float)
    searching.add_argument("path")
    ranking = commands.add_parser("rank")
    ranking.add_argument("path")
    ranking.add_argument("--json")
    args = parser.parse_args()
    if args.command == "search":
        search(args.case, args.limit, args.path)
    else:
        rank(args.path, args.json)
