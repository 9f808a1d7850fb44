"""`autosparse bench --report DIR`: run the suites and write one report people can read.

Each suite runs in its own fresh interpreter (benchmarks.command), its Markdown kept as DIR/SUITE.md.
The kernels suite also leaves JSON records, from which this module draws the summary: per kernel and
data set, autosparse beside the fastest peer and each family of peers; every case where a peer is
faster, stated with the factor; a bar chart of the speedups and log-log runtime against nonzeros
(PNG, matplotlib). DIR/README.md ties them together with the machine and the commands that reproduce
each part. The report is the source of docs/benchmarks.md's figures.
"""

from __future__ import annotations

import datetime
import json
import math
import shlex
import subprocess
import time
from pathlib import Path

from . import command, machine

#: The options that make each suite small enough for CI (suites without a quick size are skipped).
QUICK = {"kernels": ["--quick"], "coiteration": ["--quick"], "conversion": ["--quick"], "scaling": ["--quick"]}
#: The kernels suite's inputs are also drawn at these fractions of their size, for runtime against size.
SCALES = (0.125, 0.25, 0.5, 1)
#: Peers grouped into families; a family's time is its fastest member's.
FAMILIES = (("scipy", "scipy"), ("numpy", "numpy"), ("pydata", "pydata"), ("Tensora", "tensora"),
            ("C reference", "C reference"), ("MKL", "MKL"))


def build(directory: Path, suites: list[str], options: list[str]) -> bool:
    """Run `suites` with `options` into `directory`; True when any suite failed (a result disagreed)."""
    directory.mkdir(parents=True, exist_ok=True)
    quick = "--quick" in options
    others = [o for o in options if o != "--quick"]
    runs, failed = [], False
    for suite in machine.progress(suites, "suites"):
        if quick and suite not in QUICK:
            runs.append((suite, None, None, 0.0))
            continue
        extra = [*(QUICK[suite] if quick else []), *others]
        if suite == "kernels" and "--scales" not in extra:
            extra += ["--scales", *map(str, SCALES)]
        records = directory / f"{suite}.json"
        argv, environment = command(suite, [*extra, "--json", str(records)] if suite == "kernels" else extra)
        start = time.perf_counter()
        done = subprocess.run(argv, env=environment, capture_output=True, text=True, check=False)
        (directory / f"{suite}.md").write_text(done.stdout + (f"\n```\n{done.stderr[-4000:]}\n```\n"
                                                               if done.returncode else ""))
        failed |= done.returncode != 0
        runs.append((suite, f"autosparse bench {suite} {shlex.join(extra)}".strip(), done.returncode,
                     time.perf_counter() - start))
    kernels = directory / "kernels.json"
    records = json.loads(kernels.read_text())["records"] if "kernels" in suites and kernels.exists() else []
    sections = _kernels_sections(records, directory) if records else []
    (directory / "README.md").write_text(_document(runs, sections))
    return failed


def _document(runs, sections: list[str]) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False, cwd=Path(__file__).parent).stdout.strip() or "unknown"
    lines = ["# autosparse benchmark report", "",
             f"- generated {stamp} at commit {commit}",
             f"- machine: {machine.describe()}", "",
             "| suite | command | result | minutes | details |", "|---|---|---|---:|---|"]
    for suite, shown, code, seconds in runs:
        if shown is None:
            lines.append(f"| {suite} | - | not run (no quick size) | - | - |")
        else:
            result = "ok" if code == 0 else f"FAILED (exit {code})"
            lines.append(f"| {suite} | `{shown}` | {result} | {seconds / 60:.1f} | [{suite}.md]({suite}.md) |")
    return "\n".join([*lines, "", *sections]) + "\n"


def _families(records: list[dict]) -> dict[tuple[str, str], dict[str, tuple[str, float]]]:
    """(kernel, dataset) -> {"autosparse" or family: (contender, seconds)}, timed contenders only."""
    cases: dict[tuple[str, str], dict[str, tuple[str, float]]] = {}
    for record in records:
        if record["status"] or record["seconds"] is None:
            continue
        case = cases.setdefault((record["kernel"], record["dataset"]), {})
        name = record["contender"]
        family = "autosparse" if name == "autosparse" else next(
            (label for label, prefix in FAMILIES if name.startswith(prefix)), name)
        if family not in case or record["seconds"] < case[family][1]:
            case[family] = (name, record["seconds"])
    return cases


def _kernels_sections(records: list[dict], directory: Path) -> list[str]:
    cases = _families(records)
    nnz = {(r["kernel"], r["dataset"]): r["nnz"] for r in records}
    families = [label for label, _ in FAMILIES if any(label in c for c in cases.values())]
    lines = ["## Kernels", "",
             "Times are medians in ms; a family's column is its fastest contender, as peer time / autosparse time "
             "(> 1: autosparse is faster). Full tables, notes and the targets: [kernels.md](kernels.md).", "",
             "| kernel | data | nnz | autosparse ms | " + " | ".join(families) + " |",
             "|---|---|---:|---:|" + "---:|" * len(families)]
    losses = []
    for (kernel, dataset), case in cases.items():
        ours = case.get("autosparse")
        cells = []
        for family in families:
            if family not in case or ours is None:
                cells.append("-")
                continue
            name, seconds = case[family]
            cells.append(f"{seconds / ours[1]:.2f}×")
            if seconds < ours[1]:
                losses.append((ours[1] / seconds, kernel, dataset, name, seconds, ours[1]))
        shown = f"{ours[1] * 1e3:.3f}" if ours else "FAILED"
        lines.append(f"| {kernel} | {dataset} | {nnz[kernel, dataset]:,} | {shown} | " + " | ".join(cells) + " |")
    lines += ["", "### Where autosparse loses", ""]
    if not losses:
        lines.append("Nowhere in this run: no peer was faster on any kernel and data set.")
    for factor, kernel, dataset, name, seconds, ours in sorted(losses, reverse=True):
        lines.append(f"- {kernel} on {dataset}: {name} takes {seconds * 1e3:.3f} ms against autosparse's "
                     f"{ours * 1e3:.3f} ms — autosparse is {factor:.2f}× slower")
    lines += ["", "![Speedup of autosparse over each family of peers](kernels-speedup.png)", "",
              "![Runtime against nonzeros](kernels-runtime.png)", ""]
    _plots(cases, nnz, families, directory)
    return lines


def _plots(cases, nnz, families: list[str], directory: Path) -> None:
    """kernels-speedup.png (bars from 1, per full-size data set and peer family) and kernels-runtime.png
    (log-log time against nonzeros over the sizes drawn of each kernel's first data family)."""
    kernels = list(dict.fromkeys(kernel for kernel, _ in cases))
    colour = {family: f"C{n}" for n, family in enumerate(["autosparse", *(label for label, _ in FAMILIES)])}
    family_of = lambda dataset: dataset.split(" ×")[0]

    def speedups(axis, kernel):  # full-size inputs only: the sweep is the runtime plot's
        datasets = [d for k, d in cases if k == kernel and " ×" not in d] or [d for k, d in cases if k == kernel]
        width = 0.8 / max(len(families), 1)
        for n, family in enumerate(families):
            heights = [cases[kernel, d][family][1] / cases[kernel, d]["autosparse"][1]
                       if family in cases[kernel, d] and "autosparse" in cases[kernel, d] else math.nan
                       for d in datasets]
            # from 1 up or down: a bar below the line is a peer faster than autosparse
            axis.bar([x + n * width for x in range(len(datasets))], [h - 1 for h in heights], width, bottom=1,
                     label=family, color=colour[family])
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_title(kernel)
        axis.set_xticks([x + 0.4 - width / 2 for x in range(len(datasets))], datasets, rotation=30, ha="right",
                        fontsize=7)
        axis.set_ylabel("peer time / autosparse time")

    def runtimes(axis, kernel):
        first = family_of(next(d for k, d in cases if k == kernel))
        datasets = sorted((d for k, d in cases if k == kernel and family_of(d) == first), key=lambda d: nnz[kernel, d])
        for family in ["autosparse", *families]:
            points = [(nnz[kernel, d], cases[kernel, d][family][1] * 1e3) for d in datasets
                      if family in cases[kernel, d]]
            if points:
                axis.plot(*zip(*points), marker="o", linewidth=1, label=family, color=colour.get(family))
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(f"{kernel} ({first})")
        axis.set_xlabel("nonzeros")
        axis.set_ylabel("ms")

    _grid(kernels, speedups, directory / "kernels-speedup.png")
    _grid(kernels, runtimes, directory / "kernels-runtime.png")


def _grid(kernels: list[str], draw, path: Path) -> None:
    """One panel per kernel, up to four a row, drawn by `draw(axis, kernel)`, saved as PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(kernels))
    rows = math.ceil(len(kernels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for axis, kernel in zip(axes.flat, kernels):
        draw(axis, kernel)
    for axis in list(axes.flat)[len(kernels):]:
        axis.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
