"""`autosparse bench --report DIR`: run the suites and write one report people can read.

Each suite runs in its own fresh interpreter (autosparse_bench.command) and leaves three files in DIR: SUITE.md
(its own tables, as it prints them), SUITE.jsonl (its records, autosparse_bench/records.py) and SUITE.run.json
(the command, commit, date, minutes and exit status). DIR/README.md is then assembled from every suite
found in DIR, so that one suite can be run again without the others: the whole report takes hours.

From the records, per suite: autosparse's time beside every other contender on each kernel and data set,
as ratios; every case where a peer is faster, with the factor, and every case where another autosparse
schedule is; PNG speedup bars, runtime against nonzeros on log-log axes (the kernels' size sweep) and
each search's stage counts beside the paper's (the counting suites). `--docs FILE` writes the same
document to FILE with its links pointing into DIR: docs/benchmarks.md is generated this way.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import time
from pathlib import Path

from . import SUITES, command, machine, records

#: The kernels suite's inputs are also drawn at these fractions of their size, for runtime against size.
SCALES = (0.125, 0.25, 0.5, 1)
#: The kernels suite's peers grouped into families; a family's time is its fastest member's.
FAMILIES = (("scipy", "scipy"), ("numpy", "numpy"), ("pydata", "pydata"), ("Tensora", "tensora"),
            ("C reference", "C reference"), ("MKL", "MKL"), ("GraphBLAS", "GraphBLAS"))
#: The kernels suite at 1 thread and at 2: both group peers into families and sweep sizes.
KERNEL_SUITES = ("kernels", "kernels-2t")
#: The applications suite, whose tables show eager beside lazy; and its eager contender's name.
APPLICATIONS, EAGER = "applications", "autosparse eager"
SCALED = " ×"  # the kernels suite's name for an input drawn at a fraction of its size: "uniform ×0.25"


def build(directory: Path, suites: list[str], options: list[str], docs: Path | None = None) -> bool:
    """Run `suites` with `options` into `directory` and assemble the report; True when any suite failed
    (a result disagreed, or a suite could not run)."""
    directory.mkdir(parents=True, exist_ok=True)
    quick = "--quick" in options  # every suite has a quick size
    others = [o for o in options if o != "--quick"]
    failed = False
    for suite in machine.progress(suites, "suites"):
        extra = [*(["--quick"] if quick else []), *others]
        if suite in KERNEL_SUITES and "--scales" not in extra:
            extra += ["--scales", *map(str, SCALES)]
        failed |= run_suite(directory, suite, extra) != 0
    assemble(directory, docs)
    return failed


def run_suite(directory: Path, suite: str, options: list[str]) -> int:
    """One suite into DIR/SUITE.{md,jsonl,run.json}; its exit status."""
    argv, environment = command(suite, [*options, "--json", str(directory / f"{suite}.jsonl")])
    start = time.perf_counter()
    done = subprocess.run(argv, env=environment, capture_output=True, text=True, check=False)
    (directory / f"{suite}.md").write_text(done.stdout + (f"\n```\n{done.stderr[-4000:]}\n```\n"
                                                          if done.returncode else ""))
    run = {"command": f"autosparse bench {suite} {shlex.join(options)}".strip(), "commit": _commit(),
           "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "minutes": round((time.perf_counter() - start) / 60, 1), "exit": done.returncode,
           "machine": machine.describe()}
    (directory / f"{suite}.run.json").write_text(json.dumps(run, indent=1) + "\n")
    return done.returncode


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                           cwd=Path(__file__).parent)
    # the sources only: the report's own files change as it is written
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/src", ":/bench", ":/pyproject.toml"],
                           capture_output=True, text=True, check=False, cwd=Path(__file__).parent).stdout.strip()
    return (found.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


# --- the document ----------------------------------------------------------------------------------------


def assemble(directory: Path, docs: Path | None = None) -> str:
    """DIR/README.md from every suite run found in DIR (and the same at `docs`, links into DIR)."""
    runs = {suite: json.loads((directory / f"{suite}.run.json").read_text()) for suite in SUITES
            if (directory / f"{suite}.run.json").exists()}
    summary, sections = [], []
    for suite in runs:
        found = directory / f"{suite}.jsonl"
        taken = records.read(found) if found.exists() else []
        timings = [r for r in taken if r.get("kind") == "timing"]
        counts = [r for r in taken if r.get("kind") == "count"]
        lines = [f"## {suite}", "", f"`{runs[suite]['command']}` — commit {runs[suite]['commit']}, "
                 f"{runs[suite]['generated']}, {runs[suite]['minutes']} minutes. Every table of the suite, with "
                 f"its notes: [{suite}.md]({suite}.md).", ""]
        if timings:
            groups = _groups(suite, timings)
            summary.append(_summary_line(suite, groups))
            lines += _timing_section(suite, groups, directory)
        if counts:
            lines += _count_section(suite, counts, directory)
        lines += _causes(directory, suite)
        sections.append("\n".join(lines))
    text = _document(runs, summary, sections)
    (directory / "README.md").write_text(text)
    if docs is not None:
        docs.parent.mkdir(parents=True, exist_ok=True)
        docs.write_text(_rebased(text, Path(os.path.relpath(directory, docs.parent))))
    return text


def _causes(directory: Path, suite: str) -> list[str]:
    """The suite's losses with their causes, `DIR/<suite>-causes.md`, where someone has written it: a run
    can list where a peer is faster, but why (a per-call conversion, a sort the peer skips, the machine's
    page faults) is measured apart and written by hand, kept beside the run it explains."""
    found = directory / f"{suite}-causes.md"
    if not found.exists():
        return []
    return ["### Why autosparse loses where it does", "", found.read_text().strip(), ""]


def _document(runs: dict[str, dict], summary: list[str], sections: list[str]) -> str:
    machines = list(dict.fromkeys(run["machine"] for run in runs.values()))
    lines = ["# autosparse benchmark report", "",
             "Generated by `autosparse bench --report DIR [SUITE] [options]` (bench/autosparse_bench/report.py): "
             "each suite runs every contender in one process on the same data, checks every result before "
             "timing it, and reports medians of interleaved samples (autosparse_bench/timing.py). Ratios are the "
             "other contender's time over autosparse's: above 1, autosparse is faster. The machine is shared "
             "and noisy: differences under about 10% are not meaningful.", "",
             *(f"- machine: {m}" for m in machines), "",
             "| suite | command | commit | generated | minutes | result |", "|---|---|---|---|---:|---|"]
    for suite, run in runs.items():
        result = "ok" if run["exit"] == 0 else f"FAILED (exit {run['exit']})"
        lines.append(f"| [{suite}](#{suite}) | `{run['command']}` | {run['commit']} | {run['generated']} | "
                     f"{run['minutes']} | {result} |")
    missing = [suite for suite in SUITES if suite not in runs]
    if missing:
        lines += ["", f"Not in this report: {', '.join(missing)}."]
    lines += ["", "## Summary", "", *(f"- {line}" for line in summary), ""]
    return "\n".join([*lines, *sections]) + "\n"


def _rebased(text: str, folder: Path) -> str:
    """Relative links and images of `text` pointed into `folder`."""
    return re.sub(r"\]\((?!https?:|#|/)([^)]+)\)", lambda m: f"]({(folder / m.group(1)).as_posix()})", text)


# --- timing suites ---------------------------------------------------------------------------------------


def _column(suite: str, record: dict) -> str:
    """The column a contender is shown in: its family in the kernels suite, itself elsewhere."""
    if suite not in KERNEL_SUITES or record["role"] != "peer":
        return record["contender"]
    return next((label for label, prefix in FAMILIES if record["contender"].startswith(prefix)), record["contender"])


def _groups(suite: str, timings: list[dict]) -> dict[tuple[str, str], dict]:
    """(kernel, dataset) -> {"nnz", "ours": record or None, "columns": {column: its fastest record}}."""
    groups: dict[tuple[str, str], dict] = {}
    for record in timings:
        group = groups.setdefault((record["kernel"], record["dataset"]), {"nnz": 0, "ours": None, "columns": {}})
        group["nnz"] = max(group["nnz"], record.get("nnz") or 0)
        if record["role"] == "ours":
            group["ours"] = record
            continue
        column = _column(suite, record)
        held = group["columns"].get(column)
        if held is None or (record["seconds"] is not None and (held["seconds"] is None
                                                                 or record["seconds"] < held["seconds"])):
            group["columns"][column] = record
    return {key: group for key, group in groups.items() if group["ours"] is not None}


def _ratio(other: dict, ours: dict) -> str:
    if ours["seconds"] is None:
        return "—"
    if other["seconds"] is not None:
        ratio = other["seconds"] / ours["seconds"]
        return f"{ratio:.2f}×" if ratio >= 0.01 else f"{ratio:.2g}×"  # eager CP-ALS: 1/384 is no 0.00×
    if other.get("limit") and other["status"] == "timeout":  # cut off: a lower bound
        return f"> {other['limit'] / ours['seconds']:.3g}×"
    return other["status"] or "—"


def _fastest_peer(group: dict) -> dict | None:
    """The group's fastest timed peer record: every table names it, since issue 30's target is the
    fastest peer, whichever it is."""
    timed = [r for r in group["columns"].values() if r["role"] == "peer" and r["seconds"] is not None]
    return min(timed, key=lambda r: r["seconds"], default=None)


def _fastest_cells(group: dict) -> list[str]:
    """The "fastest peer" and "fastest peer / ours" cells of a row."""
    best = _fastest_peer(group)
    return ["—", "—"] if best is None else [best["contender"], _ratio(best, group["ours"])]


def _fastest_summary(groups: dict) -> str:
    """The median and the worst of the fastest peer's time over ours, across the groups that have one."""
    found = sorted((best["seconds"] / group["ours"]["seconds"], kernel, dataset, best)
                   for (kernel, dataset), group in groups.items()
                   if (best := _fastest_peer(group)) is not None and group["ours"]["seconds"])
    if not found:
        return ""
    share, kernel, dataset, best = found[0]
    return (f"; fastest peer / ours: median {statistics.median(f[0] for f in found):.2f}× over {len(found)}, "
            f"worst {share:.2f}× "
            f"({best['contender']} on {kernel}, {dataset})")


def _slower(groups: dict, role: str) -> list[tuple[float, str, str, dict, dict]]:
    """(factor, kernel, dataset, faster record, ours) for every contender of `role` faster than ours."""
    found = []
    for (kernel, dataset), group in groups.items():
        ours = group["ours"]
        for record in group["columns"].values():
            if (record["role"] == role and record["seconds"] is not None and ours["seconds"] is not None
                    and record["seconds"] < ours["seconds"]):
                found.append((ours["seconds"] / record["seconds"], kernel, dataset, record, ours))
    return sorted(found, key=lambda item: -item[0])


def _losses(found: list[tuple[float, str, str, dict, dict]]) -> list[str]:
    """One line per kernel and data set, the most faster contender first, the others after it."""
    cases: dict[tuple[str, str], list] = {}
    for item in found:  # sorted most faster first
        cases.setdefault(item[1:3], []).append(item)
    lines = []
    for (kernel, dataset), items in cases.items():
        factor, _, _, record, ours = items[0]
        also = "".join(f"; also {r['contender']} ({f:.2f}×)" for f, _, _, r, _ in items[1:])
        lines.append(f"- {kernel}, {dataset}: {record['contender']} takes {record['seconds'] * 1e3:.4g} ms against "
                     f"{ours['contender']}'s {ours['seconds'] * 1e3:.4g} ms: {factor:.2f}× faster{also}")
    return lines


def _summary_line(suite: str, groups: dict) -> str:
    with_peers = [g for g in groups.values() if any(r["role"] == "peer" and r["seconds"] for r in g["columns"].values())]
    losses = _slower(groups, "peer")
    lost = {(kernel, dataset) for _, kernel, dataset, _, _ in losses}
    line = f"[{suite}](#{suite}): {len(groups)} measurements"
    if with_peers:
        line += (f"; autosparse is the fastest on {len(with_peers) - len(lost)} of the {len(with_peers)} that have "
                 f"peers")
    if losses:
        factor, kernel, dataset, record, _ = losses[0]
        line += f", slower than some peer on {len(lost)} (worst: {record['contender']} {factor:.2f}× faster on {kernel}, {dataset})"
    line += _fastest_summary(groups)
    variants = _slower(groups, "variant")
    if variants:
        factor, kernel, dataset, record, _ = variants[0]
        line += (f"; another autosparse schedule is faster on {len({(k, d) for _, k, d, _, _ in variants})} "
                 f"(most: {record['contender']} {factor:.2f}× on {kernel}, {dataset})")
    return line


def _timing_section(suite: str, groups: dict, directory: Path) -> list[str]:
    lines = _application_tables(groups) if suite == APPLICATIONS else _kernel_tables(groups)
    for role, title, nobody in (("peer", "Where autosparse loses to a peer", "Nowhere: no peer was faster."),
                                ("variant", "Where another autosparse schedule or setting is faster",
                                 "Nowhere.")):
        found = _slower(groups, role)
        if role == "variant" and not found and not any(r["role"] == role for g in groups.values()
                                                       for r in g["columns"].values()):
            continue
        lines += [f"### {title}", "", *(_losses(found) or [nobody]), ""]
    if _speedup_plot(suite, groups, directory / f"{suite}-speedup.png"):
        lines += [f"![Each contender's time over autosparse's, {suite}]({suite}-speedup.png)", ""]
    if suite in KERNEL_SUITES and any(SCALED in dataset for _, dataset in groups):
        _runtime_plot(groups, directory / f"{suite}-runtime.png")
        lines += [f"![Runtime against nonzeros, the kernels' size sweep]({suite}-runtime.png)", ""]
    return lines


def _kernel_tables(groups: dict) -> list[str]:
    """A table per kernel: ours in ms, each other contender as its time over ours."""
    lines = []
    kernels = list(dict.fromkeys(kernel for kernel, _ in groups))
    for kernel in kernels:
        mine = {dataset: group for (k, dataset), group in groups.items() if k == kernel}
        ours = ", ".join(dict.fromkeys(group["ours"]["contender"] for group in mine.values()))
        columns = list(dict.fromkeys(c for group in mine.values() for c in group["columns"]))
        lines += [f"### {kernel}", "", f"Ours: {ours}, in ms; the others as their time / ours.", "",
                  "| " + " | ".join(["data", "nnz", "ours ms", "fastest peer", "fastest peer / ours", *columns])
                  + " |", "|---|---:|---:|---|---:|" + "---:|" * len(columns)]
        for dataset, group in mine.items():
            seconds = group["ours"]["seconds"]
            shown = f"{seconds * 1e3:.4g}" if seconds is not None else group["ours"]["status"] or "—"
            cells = [_ratio(group["columns"][c], group["ours"]) if c in group["columns"] else "" for c in columns]
            lines.append(f"| {dataset} | {group['nnz']:,} | {shown} | " + " | ".join([*_fastest_cells(group), *cells])
                         + " |")
        lines.append("")
    return lines


def _application_tables(groups: dict) -> list[str]:
    """A table per application of the applications suite: eager beside lazy (fusion pays where lazy / eager
    is under 1), the kernels each calls a step, their first calls (compilation) apart, and each peer's time
    over lazy's, with the peer's first call where it is over twice its steady time (a compiler: finch)."""
    lines = []
    for application in dict.fromkeys(kernel for kernel, _ in groups):
        mine = {dataset: group for (kernel, dataset), group in groups.items() if kernel == application}
        peers = list(dict.fromkeys(c for g in mine.values() for c, r in g["columns"].items() if r["role"] == "peer"))
        header = ["data", "nnz", "eager ms", "lazy ms", "lazy / eager", "kernel calls / step, eager → lazy",
                  "first call ms, eager / lazy", *(f"{peer} / lazy" for peer in peers)]
        lines += [f"### {application}", "", "Medians of whole runs in ms; first calls (kernel compilation included) "
                  "apart; each peer as its time over lazy's (above 1, autosparse lazy is faster).", "",
                  "| " + " | ".join(header) + " |",
                  "|---|---:|---:|---:|---:|---|---|" + "---:|" * len(peers)]
        for dataset, group in mine.items():
            lazy = group["ours"]
            eager = group["columns"].get(EAGER, {"seconds": None, "status": "—"})
            cells = [_ms(eager), _ms(lazy), _ratio(lazy, eager) if eager["seconds"] else "—",
                     f"{_per_step(eager)} → {_per_step(lazy)}", f"{_first(eager)} / {_first(lazy)}"]
            for peer in peers:
                record = group["columns"].get(peer)
                compiles = record is not None and record["seconds"] and (record.get("first") or 0) > 2 * record[
                    "seconds"]
                cells.append("" if record is None else _ratio(record, lazy) + (
                    f" (first call {record['first']:.3g} s)" if compiles else ""))
            lines.append(f"| {dataset} | {group['nnz']:,} | " + " | ".join(cells) + " |")
        untimed = dict.fromkeys(f"- {r['contender']}: {r['status']}, {r.get('detail') or 'no reason recorded'}"
                                for g in mine.values() for r in (g["ours"], *g["columns"].values()) if r["status"])
        lines += ["", *untimed, ""] if untimed else [""]
    return lines


def _ms(record: dict) -> str:
    return f"{record['seconds'] * 1e3:.4g}" if record.get("seconds") is not None else record.get("status") or "—"


def _first(record: dict) -> str:
    return f"{record['first'] * 1e3:.4g}" if record.get("first") is not None else "—"


def _per_step(record: dict) -> str:
    """Kernel calls a step, or a run where the run reports no steps (SSSP)."""
    calls, steps = record.get("calls"), record.get("steps")
    if calls is None:
        return "—"
    return f"{calls / steps:.3g}" if steps else f"{calls} a run"


def _colours(names) -> dict[str, str]:
    return {name: f"C{n % 10}" for n, name in enumerate(dict.fromkeys(names))}


def _speedup_plot(suite: str, groups: dict, path: Path) -> bool:
    """Bars from 1 (log scale), one panel per kernel, one bar per full-size data set and contender
    (bounds left out): a bar below the line is a contender faster than autosparse."""
    kernels = list(dict.fromkeys(kernel for (kernel, _), g in groups.items()
                                 if any(r["role"] != "bound" for r in g["columns"].values())))
    colour = _colours(c for g in groups.values() for c, r in g["columns"].items() if r["role"] != "bound")

    def draw(axis, kernel):
        datasets = [d for k, d in groups if k == kernel and SCALED not in d] or [d for k, d in groups if k == kernel]
        columns = list(dict.fromkeys(c for d in datasets for c, r in groups[kernel, d]["columns"].items()
                                     if r["role"] != "bound"))
        width = 0.8 / max(len(columns), 1)
        for n, column in enumerate(columns):
            heights = []
            for dataset in datasets:
                group = groups[kernel, dataset]
                record, ours = group["columns"].get(column), group["ours"]["seconds"]
                heights.append(record["seconds"] / ours if record and record["seconds"] and ours else math.nan)
            axis.bar([x + n * width for x in range(len(datasets))], [h - 1 for h in heights], width, bottom=1,
                     label=column, color=colour[column])
        axis.axhline(1.0, color="black", linewidth=0.8)
        _log_axis(axis)
        axis.set_title(kernel, fontsize=9)
        axis.set_xticks([x + 0.4 - width / 2 for x in range(len(datasets))], datasets, rotation=30, ha="right",
                        fontsize=6)
        axis.set_ylabel("their time / autosparse's", fontsize=7)
        axis.legend(fontsize=5)

    return _grid(kernels, draw, path)


def _log_axis(axis) -> None:
    """A log y axis labelled with plain numbers, ticks between powers of ten labelled too when the data
    span less than a decade (the default labels them 1.2 × 10^0)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axis.yaxis.set_major_formatter(plain)
    low, high = axis.get_ylim()
    axis.yaxis.set_minor_formatter(plain if high / low < 10 else NullFormatter())
    axis.tick_params(axis="y", which="both", labelsize=6)


def _runtime_plot(groups: dict, path: Path) -> None:
    """Log-log time against nonzeros over the sizes drawn of each kernel's first data family."""
    kernels = list(dict.fromkeys(kernel for kernel, d in groups if SCALED in d))
    colour = _colours(["autosparse", *(label for label, _ in FAMILIES)])
    family_of = lambda dataset: dataset.split(SCALED)[0]

    def draw(axis, kernel):
        first = family_of(next(d for k, d in groups if k == kernel and SCALED in d))
        datasets = sorted((d for k, d in groups if k == kernel and family_of(d) == first),
                          key=lambda d: groups[kernel, d]["nnz"])
        series: dict[str, list] = {}
        for dataset in datasets:
            group = groups[kernel, dataset]
            for column, record in {"autosparse": group["ours"], **group["columns"]}.items():
                if record["seconds"] is not None:
                    series.setdefault(column, []).append((group["nnz"], record["seconds"] * 1e3))
        for column, points in series.items():
            axis.plot(*zip(*points), marker="o", linewidth=1, label=column, color=colour.get(column))
        axis.set_xscale("log")
        _log_axis(axis)
        axis.set_title(f"{kernel} ({first})", fontsize=9)
        axis.set_xlabel("nonzeros", fontsize=7)
        axis.set_ylabel("ms", fontsize=7)
        axis.legend(fontsize=5)

    _grid(kernels, draw, path)


# --- counting suites -------------------------------------------------------------------------------------


def _count_section(suite: str, counts: list[dict], directory: Path) -> list[str]:
    """Per kernel and mode, the candidates left after each stage of the search, the paper's beside."""
    runs: dict[tuple[str, str], list[dict]] = {}
    for record in counts:  # a stage's name without what it found: "7 asymptotic filter (4 distinct costs)"
        stage = re.sub(r"\s*\([^)]*\)", "", record["stage"])
        runs.setdefault((record["kernel"], record["mode"]), []).append({**record, "stage": stage})
    lines = ["### Candidates after each stage, beside the paper's", "",
             "| kernel | mode | after each stage (ours) | the paper's | seconds (ours) | seconds (paper) |",
             "|---|---|---|---|---:|---:|"]
    for (kernel, mode), stages in runs.items():
        ours = " → ".join(f"{s['count']:,}" for s in stages)
        paper = "; ".join(f"{s['stage']}: {s['paper']:,}" for s in stages if s.get("paper") is not None) or "—"
        theirs = [s["paper_seconds"] for s in stages if s.get("paper_seconds") is not None]
        lines.append(f"| {kernel} | {mode} | {ours} | {paper} | {sum(s['seconds'] for s in stages):.3g} | "
                     f"{f'{sum(theirs):.3g}' if theirs else '—'} |")
    stage_names = list(dict.fromkeys(s["stage"] for stages in runs.values() for s in stages))
    lines += ["", "Stages: " + "; ".join(f"{n + 1}. {name}" for n, name in enumerate(stage_names)), ""]
    if _count_plot(runs, stage_names, directory / f"{suite}-stages.png"):
        lines += [f"![Candidates after each stage, {suite}]({suite}-stages.png)", ""]
    return lines


def _count_plot(runs: dict, stage_names: list[str], path: Path) -> bool:
    kernels = list(dict.fromkeys(kernel for kernel, _ in runs))
    colour = _colours(mode for _, mode in runs)

    def draw(axis, kernel):
        for (k, mode), stages in runs.items():
            if k != kernel:
                continue
            x = [stage_names.index(s["stage"]) + 1 for s in stages]
            axis.plot(x, [max(s["count"], 1) for s in stages], marker="o", linewidth=1, label=mode, color=colour[mode])
            known = [(xi, s["paper"]) for xi, s in zip(x, stages) if s.get("paper")]
            if known:
                axis.plot(*zip(*known), linestyle="none", marker="x", markersize=8, color=colour[mode],
                          label=f"{mode}: paper")
        _log_axis(axis)
        axis.set_title(kernel, fontsize=9)
        axis.set_xlabel("stage", fontsize=7)
        axis.set_ylabel("candidates", fontsize=7)
        axis.legend(fontsize=5)

    return _grid(kernels, draw, path)


def _grid(panels: list[str], draw, path: Path) -> bool:
    """One panel per name, up to four a row, drawn by `draw(axis, name)`, saved as PNG; False if none."""
    if not panels:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for axis, name in zip(axes.flat, panels):
        draw(axis, name)
    for axis in list(axes.flat)[len(panels):]:
        axis.set_visible(False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
