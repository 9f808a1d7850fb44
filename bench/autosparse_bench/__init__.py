"""The benchmark suites behind `autosparse bench SUITE`: autosparse beside its peers on generated and real
data (`data`), one module per suite, each with an argparse `main(argv)`, and the report over them
(`report`). A package of its own beside the product, installed with it; autosparse never imports it (its
CLI loads `cli.bench` by name, and only when `bench` is named). The suites import the `bench` extra
(Tensora, pydata sparse); this module itself imports nothing, so the command line can name the suites
without loading them."""

from __future__ import annotations

import os
import sys

#: `autosparse bench SUITE` -> the module of autosparse_bench that runs it.
SUITES = {"kernels": "kernels", "kernels-2t": "kernels", "coiteration": "coiteration", "asymptotic": "asymptotic_select",
          "asymptotic-counts": "asymptotic_counts", "sparseauto": "sparseauto_select",
          "sparseauto-counts": "sparseauto_counts", "conversion": "conversion", "scaling": "parallel_kernels",
          "distributed": "distributed_kernels", "autotune": "autotune",
          "applications": "applications"}
#: Options a suite's module is always run with: `kernels-2t` is the kernels suite at 2 threads.
SUITE_OPTIONS = {"kernels-2t": ("--threads", "2")}
#: Peers' own thread pools held to one thread; OpenMP too where a suite compares serial kernels.
SERIAL = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
SERIAL_SUITES = {"kernels", "conversion", "asymptotic", "sparseauto", "distributed", "autotune", "applications"}
#: Suites that time threaded libraries in interleaved rounds: each library's idle OpenMP threads sleep
#: rather than spin, so that one contender's threads do not take the cores the next one runs on.
THREADED_SUITES = {"kernels-2t", "scaling"}


def command(suite: str, options: list[str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run `suite` in a fresh interpreter: thread-count settings must reach
    numpy's BLAS, MKL and numba before they load, which a process that imported numpy cannot do."""
    environment = {**SERIAL, **({"OMP_NUM_THREADS": "1"} if suite in SERIAL_SUITES else {}),
                   **({"OMP_WAIT_POLICY": "passive"} if suite in THREADED_SUITES else {}), **os.environ}
    program = (f"import sys; sys.argv = [{f'autosparse bench {suite}'!r}, *sys.argv[1:]]; "
               f"from autosparse_bench.{SUITES[suite]} import main; main()")
    return [sys.executable, "-c", program, *SUITE_OPTIONS.get(suite, ()), *options], environment


def kernel_suite_parser(doc: str, kernels, repeat: int, quick_help: str):
    """The command line of a suite over named kernels: --repeat, --quick, --seed, --kernel and --json."""
    import argparse

    from .records import add_option

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--kernel", nargs="+", choices=list(kernels), default=list(kernels))
    add_option(parser)
    return parser


def quick_sizes(parser, args, **sizes) -> None:
    """With --quick, `sizes` for the options the command line left at their defaults: a run small
    enough for CI that still goes through every step of the suite."""
    if args.quick:
        for name, value in sizes.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
