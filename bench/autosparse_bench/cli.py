"""`autosparse bench`: the command the product's CLI loads by name when it is asked for, so that the
compiler never imports its benchmarks. Like this package's `__init__`, it imports no suite: naming the
suites and checking the command line must not load Tensora or the other peers."""

from __future__ import annotations

import os
from pathlib import Path

import click

from . import SUITES, command


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.option("--report", "report", type=click.Path(path_type=Path), default=None,
              help="Run the suites (all, or the one named) and write a report into this folder.")
@click.option("--docs", "docs", type=click.Path(path_type=Path), default=None,
              help="With --report: also write the report's document to this file, its links into the folder.")
@click.argument("suite", metavar=f"{{{'|'.join(SUITES)}}}", required=False)
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def bench(context: click.Context, report: Path | None, docs: Path | None, suite: str | None,
          options: tuple[str, ...]) -> None:
    """Run a benchmark suite: every contender in this process on the same data, medians and ratios as
    Markdown on stdout. The suite's own options follow it (`autosparse bench kernels --help`). Needs the
    `bench` extra (pip install -e '.[bench]').

    With --report DIR: run the suites, each with the options given (`--quick`: every suite's quick
    size), and write DIR/README.md (tables, where autosparse loses, the machine) with PNG plots, from
    every suite run found in DIR (a suite run again replaces its part)."""
    if report is not None and suite is not None and suite.startswith("-"):  # options for every suite
        suite, options = None, (suite, *options)
    if suite in ("-h", "--help"):  # the suites' own --help comes after their name
        click.echo(context.get_help())
        return
    if suite is not None and suite not in SUITES:
        raise click.BadParameter(f"{suite!r} is not one of {', '.join(SUITES)}", param_hint="SUITE")
    if report is not None:
        if suite is None and set(options) - {"--quick"}:  # the suites' options differ
            raise click.UsageError("Options other than --quick go to one suite: name it after --report DIR")
        from . import report as reporting
        failed = reporting.build(report, [suite] if suite else list(SUITES), list(options), docs)
        raise SystemExit(1 if failed else 0)
    if suite is None:
        raise click.UsageError("Name a suite (or --report DIR)")
    argv, environment = command(suite, list(options))
    os.execve(argv[0], argv, environment)
