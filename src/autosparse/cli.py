"""The `autosparse` command: `demo` (load real data, convert between formats, run kernels, summarise),
`info` and `convert` for tensor files, `compile` (print a kernel's CIN and C), `run` (evaluate an
expression on tensor files), `autoschedule` (print an expression's frontier of schedules) and `bench`
(the benchmark suites, a package of their own beside this one: bench/autosparse_bench)."""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from pathlib import Path

import click
import numpy as np
import scipy.sparse

from . import __version__, io
from .errors import AutosparseError
from .tensor import Tensor

DEFAULT_DATA = Path(os.environ.get("AUTOSPARSE_DATA", "../shared/data"))
MATRIX_FORMATS = ("csr", "csc", "dcsr", "coo", "dh")
#: Commands whose code lives in another package of the same distribution, imported by name only when
#: named (or listed): the compiler never imports its benchmarks.
ELSEWHERE = {"bench": "autosparse_bench.cli"}
#: The most entries `run` prints; a larger result is written with -o.
PRINT_LIMIT = 400
#: How close a kernel's result must be to its reference (rounding differs with the order of the sums).
RTOL, ATOL = 1e-9, 1e-12
# click 8.2's "no arguments: show the help", which is a UsageError there and must stay the help.
_HELP_ON_NO_ARGUMENTS = getattr(click.exceptions, "NoArgsIsHelpError", ())


def demo_formats(order: int) -> tuple[str, ...]:
    """Formats to show off for a tensor of `order` modes: the matrix classics, or CSF, COO, a mode
    ordering and a hashed level for other orders."""
    if order == 2:
        return MATRIX_FORMATS
    rotated = "".join(f"s{(mode + 1) % order}" for mode in range(order))
    return ("csf", "coo", rotated, "d" + "s" * (order - 2) + "h" if order > 1 else "h")


class UserMistake(click.ClickException):
    """A user's mistake (an autosparse error, or a path that cannot be read or written): one line on
    stderr and exit status 2, as click reports a bad option. Other exceptions are bugs and keep their
    traceback."""

    exit_code = 2

    @classmethod
    def of(cls, error: Exception) -> "UserMistake":
        if isinstance(error, OSError):
            return cls(f"{error.strerror or type(error).__name__}: {error.filename}")
        if isinstance(error, click.UsageError):  # click's own report is usage, message and hint: 3 lines
            where = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
            return cls(_first_line(error.format_message()).rstrip(".") + where)
        return cls(_first_line(str(error)) or type(error).__name__)


def _first_line(message: str) -> str:
    return (message.strip().splitlines() or [""])[0]


def _is_mistake(error: Exception) -> bool:
    """Autosparse's errors, click's usage errors (bar the help shown for no arguments) and failures on a
    path the user named; any other exception is a bug."""
    if isinstance(error, OSError):
        return error.filename is not None
    if isinstance(error, click.UsageError):
        return not isinstance(error, _HELP_ON_NO_ARGUMENTS)
    return isinstance(error, AutosparseError)


@contextlib.contextmanager
def _mistakes_reported():
    try:
        yield
    except (click.UsageError, OSError, AutosparseError) as error:
        if not _is_mistake(error):
            raise
        raise UserMistake.of(error) from None


class _Commands(click.Group):
    """Turns a user's mistake in any command, or in the options before it, into a `UserMistake`."""

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        with _mistakes_reported():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context):
        with _mistakes_reported():
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *ELSEWHERE})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in ELSEWHERE:
            return _command_elsewhere(name)
        return super().get_command(ctx, name)


def _command_elsewhere(name: str) -> click.Command:
    """Command `name` of its own package, or, where that package is not installed, a command that says so
    (a checkout run with only src/ on the path has no bench/)."""
    module = ELSEWHERE[name]
    package = module.partition(".")[0]
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as error:
        if error.name != package:  # the package is there but something it imports is not: a real failure
            raise
    message = (f"`autosparse {name}` needs the {package} package (bench/ beside src/ in the checkout), "
               f"which `pip install .` installs with autosparse")

    def refuse(arguments: tuple[str, ...]) -> None:
        raise UserMistake(message)

    return click.Command(name, callback=refuse, help=message, short_help=f"Not installed: {package}.",
                         params=[click.Argument(["arguments"], nargs=-1, type=click.UNPROCESSED)],
                         context_settings={"ignore_unknown_options": True})


@click.group(cls=_Commands)
@click.version_option(__version__, prog_name="autosparse")
def main() -> None:
    """autosparse: sparse tensor algebra compiler."""


@main.command()
@click.option("--data", type=click.Path(path_type=Path), default=DEFAULT_DATA, show_default=True,
              help="Folder of .mtx/.tns(.gz) files; generated data is used when it does not exist.")
@click.option("--limit", type=int, default=6, show_default=True, help="How many files to load.")
def demo(data: Path, limit: int) -> None:
    """Load tensors, convert each through several formats and back, run compiled kernels on them, check
    every result against scipy.sparse (or numpy) and print a summary."""
    started = time.perf_counter()
    files = sorted(p for p in data.glob("*") if p.name.endswith((".mtx.gz", ".tns.gz", ".mtx", ".tns")))
    tensors = [(p.name, lambda p=p: io.read(p)) for p in files[:limit]] if files else _generated()
    click.echo(f"{'tensor':28} {'shape or kernel':>22} {'nnz':>9}  {'format':8} {'ms':>7}  check")
    conversions = kernels = 0
    for name, load in tensors:
        tensor = load()
        conversions += _demo_conversions(name, tensor)
        kernels += _demo_kernels(name, tensor)
    click.echo(f"{len(tensors)} tensors, {conversions} conversions and {kernels} kernels, each result equal "
               f"to its reference, in {time.perf_counter() - started:.1f} s")


def _demo_conversions(name: str, tensor: Tensor) -> int:
    """Convert the tensor to each of its demo formats and back, checking that the entries survive; the
    number of conversions shown."""
    reference = tensor.to_coo()
    formats = demo_formats(tensor.order)
    for fmt in formats:
        start = time.perf_counter()
        converted = tensor.to_format(fmt)
        elapsed = 1e3 * (time.perf_counter() - start)
        back = converted.to_format(tensor.format).to_coo()
        _report(f"{name:28} {str(tensor.shape):>22} {converted.nnz:>9,}  {fmt:8} {elapsed:7.1f}",
                all(np.array_equal(a, b) for a, b in zip(reference, back)))
    return len(formats)


def _report(line: str, same: bool) -> None:
    """Print a demo line with its check; a mismatch ends the demo with status 1 (a bug, not a mistake)."""
    click.echo(f"{line}  {'ok' if same else 'MISMATCH'}")
    if not same:
        raise SystemExit(1)


def _demo_kernels(name: str, tensor: Tensor) -> int:
    """Run compiled kernels on the tensor and check each against a reference computed by scipy.sparse
    (or by numpy from the tensor's entries where the result is dense): no matrix is ever densified. The
    number of kernels run."""
    from .api import evaluate

    cases = _kernel_cases(tensor, np.random.default_rng(0))
    for expression, operands, fmt, expected in cases:
        start = time.perf_counter()
        result = evaluate(expression, format=fmt, **operands)
        elapsed = 1e3 * (time.perf_counter() - start)
        _report(f"{name:28} {expression:>38} {_stored(result):>9,}  {fmt:8} {elapsed:7.1f}",
                same_entries(result, expected()))
    return len(cases)


def _kernel_cases(tensor: Tensor, rng: np.random.Generator) -> list[tuple]:
    """(expression, operands, result format, reference) for the kernels the demo runs on a matrix (SpMV,
    element-wise add, SpGEMM when square) or a 3-tensor (TTV, MTTKRP); none for other orders."""
    if tensor.order == 2:
        matrix, x = tensor.to_scipy(), rng.random(tensor.shape[1])
        cases = [("y(i) = A(i,j) * x(j)", dict(A=tensor, x=x), "dense", lambda: matrix @ x),
                 ("C(i,j) = A(i,j) + B(i,j)", dict(A=tensor, B=tensor.to_format("dcsr")), "csr",
                  lambda: matrix + matrix)]
        if tensor.shape[0] == tensor.shape[1]:
            cases.append(("C(i,j) = A(i,k) * B(k,j)", dict(A=tensor, B=tensor), "csr", lambda: matrix @ matrix))
        return cases
    if tensor.order != 3:
        return []
    (i, j, k), values = tensor.to_coo()
    v, X, Y = rng.random(tensor.shape[2]), rng.random((tensor.shape[1], 8)), rng.random((tensor.shape[2], 8))
    csf = tensor.to_format("csf")

    def mttkrp() -> np.ndarray:
        out = np.zeros((tensor.shape[0], 8))
        np.add.at(out, i, values[:, None] * X[j] * Y[k])
        return out

    return [("A(i,j) = T(i,j,k) * v(k)", dict(T=csf, v=v), "ds",
             lambda: scipy.sparse.coo_array((values * v[k], (i, j)), shape=tensor.shape[:2])),
            ("A(i,l) = T(i,j,k) * X(j,l) * Y(k,l)", dict(T=csf, X=X, Y=Y), "dense", mttkrp)]


def same_entries(result, reference) -> bool:
    """Whether `result` (a Tensor, numpy array or number) holds the values of `reference` (a
    scipy.sparse matrix, numpy array or number), compared entry by entry over the union of their patterns:
    explicit zeros on either side do not matter, and neither side is densified."""
    result_shape, result_keys, result_values = _entries(result)
    reference_shape, reference_keys, reference_values = _entries(reference)
    if result_shape != reference_shape:
        return False
    union, where = np.unique(np.concatenate([result_keys, reference_keys]), return_inverse=True)
    totals = np.zeros((2, len(union)), dtype=np.result_type(result_values, reference_values, float))
    np.add.at(totals[0], where[:len(result_keys)], result_values)
    np.add.at(totals[1], where[len(result_keys):], reference_values)
    return bool(np.allclose(totals[0], totals[1], rtol=RTOL, atol=ATOL))


def _entries(value) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """(shape, each stored entry's position in row-major order, its value); duplicates are summed by the
    caller, as scipy sums a COO matrix's."""
    if isinstance(value, Tensor):
        coords, values = value.to_coo()
        return value.shape, np.ravel_multi_index(tuple(coords), value.shape), values
    if scipy.sparse.issparse(value):
        coo = value.tocoo()
        return coo.shape, np.ravel_multi_index((coo.row, coo.col), coo.shape), coo.data
    array = np.asarray(value)
    return array.shape, np.arange(array.size), array.ravel()


def _stored(result) -> int:
    """How many entries a result stores: a Tensor's nnz, an array's size, 1 for a number."""
    return result.nnz if isinstance(result, Tensor) else int(np.size(result))


def _generated():
    """A sparse matrix and a 3-tensor built from random coordinates (never through a dense array)."""
    rng = np.random.default_rng(0)
    positions = np.unravel_index(rng.choice(2000 * 3000, size=12_000, replace=False), (2000, 3000))
    coords = rng.integers(0, [300, 400, 500], size=(50_000, 3)).T
    return [("random 2000x3000 (generated)",
             lambda: Tensor.from_coo(np.stack(positions), rng.random(12_000), (2000, 3000), format="csr")),
            ("random 300x400x500 (generated)", lambda: Tensor.from_coo(coords, rng.random(50_000), (300, 400, 500)))]


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
def info(path: Path) -> None:
    """Print a tensor file's shape, format and entry count."""
    tensor = io.read(path)
    click.echo(repr(tensor))


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("target", type=click.Path(path_type=Path))
def convert(source: Path, target: Path) -> None:
    """Convert between .mtx and .tns files (gzip by the .gz suffix)."""
    io.write(target, io.read(source))


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name or not setting:
            raise click.BadParameter(f"Expected NAME=VALUE, but found {value!r}", param_hint=what)
        pairs[name.strip()] = setting.strip()
    return pairs


@main.command("compile")
@click.argument("expression")
@click.option("-f", "--format", "formats", multiple=True, metavar="NAME=FORMAT",
              help="A tensor's format, e.g. -f A=csr (dense when not given).")
@click.option("--schedule", default=None, help="A CIN statement to compile instead of the default schedule.")
def compile_command(expression: str, formats: tuple[str, ...], schedule: str | None) -> None:
    """Print the concrete index notation and the C code of EXPRESSION's kernel."""
    from .api import compile as compile_kernel

    kernel = compile_kernel(expression, _pairs(formats, "--format"), schedule)
    click.echo(f"// {kernel.cin}")
    click.echo(kernel.source)


@main.command()
@click.argument("expression")
@click.option("-i", "--input", "inputs", multiple=True, metavar="NAME=FILE", required=True,
              help="An operand read from a .mtx or .tns file (gzip allowed).")
@click.option("-f", "--format", "formats", multiple=True, metavar="NAME=FORMAT",
              help="Store an operand (or the result) in this format.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help=f"Write the result here (.mtx or .tns); printed when omitted, if at most {PRINT_LIMIT} entries.")
def run(expression: str, inputs: tuple[str, ...], formats: tuple[str, ...], output: Path | None) -> None:
    """Evaluate EXPRESSION on operands read from files. Without a format for the result, it is sparse
    when sparse operands bound its pattern (operands read from files are sparse), else dense."""
    from .api import compile as compile_kernel
    from .notation import parse

    assignment = parse(expression)
    if output is not None and not assignment.lhs.indices:
        raise UserMistake(f"The result {assignment.lhs.tensor}() is a number, printed rather than written: drop -o")
    if output is not None:
        io.check_writable(output, len(assignment.lhs.indices))
    chosen = _pairs(formats, "--format")
    operands = {name: io.read(Path(path)) for name, path in _pairs(inputs, "--input").items()}
    for name, tensor in operands.items():
        chosen.setdefault(name, str(tensor.format))
    name = assignment.lhs.tensor
    result = compile_kernel(expression, chosen)(**operands)  # the result's format inferred when not given
    if output is None:
        _print_result(result)
        return
    io.write(output, Tensor.from_numpy(result) if isinstance(result, np.ndarray) else result)
    click.echo(f"wrote {name} {result.shape} with {_stored(result):,} entries to {output}")


def _print_result(result) -> None:
    """A number as itself, a dense result as numpy prints it, a sparse one entry by entry; past
    `PRINT_LIMIT` entries a one-line mistake asking for -o."""
    if not isinstance(result, (Tensor, np.ndarray)):
        click.echo(result)
        return
    if _stored(result) > PRINT_LIMIT:
        raise UserMistake(f"The result {_describe(result)} is too large to print ({_stored(result):,} "
                          f"entries, at most {PRINT_LIMIT}): pass -o FILE (.mtx or .tns) to write it")
    if isinstance(result, Tensor) and not result.format.is_dense:
        coords, values = result.to_coo()
        click.echo(f"{_describe(result)} with {result.nnz:,} entries:")
        for coordinate, value in zip(coords.T.tolist(), values.tolist()):
            click.echo(f"  {tuple(coordinate)}  {value}")
        return
    click.echo(result.to_numpy() if isinstance(result, Tensor) else result)


def _describe(result) -> str:
    if isinstance(result, Tensor):
        return f"{result.shape} in {result.format}"
    return f"{result.shape} dense"


@main.command("autoschedule")
@click.argument("expression")
@click.option("-f", "--format", "formats", multiple=True, metavar="NAME=FORMAT",
              help="A tensor's format, e.g. -f B=csr (dense when not given).")
@click.option("--model", type=click.Choice(["asymptotic", "sparseauto", "auto"]), default=None,
              help="auto: both models' candidates side by side (SparseAuto's where the expression is a product). "
                   "Default: asymptotic; auto with --remember (what schedule=\"auto\" searches).")
@click.option("--taco-mode", is_flag=True, help="Only schedules TACO can run (Ahrens et al.'s restricted mode).")
@click.option("--no-sunk-costs", is_flag=True, help="Compare raw task sets, without sunk costs and assumptions.")
@click.option("--paper", is_flag=True, help="The paper's frontier: Fig. 5's workspace analysis, asymptotic "
              "cost the only criterion (Figure 6 but three counts: docs/notes/autoschedule-counts.md).")
@click.option("--time-limit", type=float, default=None, help="Stop taking programs after this many seconds.")
@click.option("-c", "--constraint", "constraints", multiple=True, metavar="TEXT",
              help="sparseauto: what stage 3 may assume, e.g. -c 'nnz(B) <= 1e5' -c '10*j < k'.")
@click.option("--rule", type=click.Choice(["everywhere", "literal"]), default="everywhere", show_default=True,
              help="sparseauto: stage 3's dominance (literal: the paper's Listing 1).")
@click.option("--max-memory-depth", type=int, default=2, show_default=True,
              help="sparseauto: stage 1 drops temporaries of more dimensions.")
@click.option("--stage1-groups", is_flag=True, help="sparseauto: also count stage 1's distinct costs (slow).")
@click.option("--stats", is_flag=True, help="Print the stage-by-stage counts and times.")
@click.option("--check", is_flag=True, help="Compile every candidate and compare it with numpy.")
@click.option("--remember", is_flag=True,
              help="Store the front where evaluate(..., schedule=\"auto\") looks for it, replacing the short "
                   "search of a first call: search once for longer (--time-limit 60; none: the whole search), "
                   "every later process selects from it. Give the result's format as evaluate gets it (inferred when not given).")
def autoschedule_command(expression: str, formats: tuple[str, ...], model: str | None, taco_mode: bool,
                         no_sunk_costs: bool, paper: bool, time_limit: float | None, constraints: tuple[str, ...],
                         rule: str, max_memory_depth: int, stage1_groups: bool, stats: bool, check: bool,
                         remember: bool) -> None:
    """Print EXPRESSION's schedules as a table: the asymptotic frontier, SparseAuto's final set, or both
    (each candidate's CIN, transposes, temporaries, its model's cost and the cost of its CIN as it runs)."""
    from tqdm import tqdm

    searching_another = [flag for flag, given in (("--taco-mode", taco_mode), ("--no-sunk-costs", no_sunk_costs),
                                                  ("--paper", paper), ("--constraint", constraints),
                                                  ("--rule", rule != "everywhere"),
                                                  ("--max-memory-depth", max_memory_depth != 2),
                                                  ("--stage1-groups", stage1_groups)) if given]
    if remember and searching_another:
        raise click.UsageError(f"--remember stores the front schedule=\"auto\" searches: not with "
                               f"{', '.join(searching_another)}")
    model = model or ("auto" if remember else "asymptotic")

    from .api import autoschedule
    from .autoschedule.verify import verify

    bar = tqdm(unit=" cost groups" if model == "sparseauto" else " programs", leave=False, disable=None,
               mininterval=0.5)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    if remember:
        front = autoschedule(expression, _pairs(formats, "--format"), model, remember=True, time_limit=time_limit,
                             progress=progress)
    else:
        front = autoschedule(expression, _pairs(formats, "--format"), model, taco=taco_mode,
                             sunk_costs=not no_sunk_costs, paper=paper, time_limit=time_limit,
                             progress=progress, constraints=constraints, rule=rule,
                             max_memory_depth=max_memory_depth, stage1_groups=stage1_groups)
    bar.close()
    click.echo(str(front))
    if remember:
        click.echo(f"remembered for schedule=\"auto\" (model {model}): {len(front)} candidates"
                   + ("" if front.complete else ", a partial search (time limit reached)"))
    if stats:
        for part in getattr(front, "fronts", [front]):
            _echo_stages(part)
    if check:
        passed, failures = verify(front)
        for failure in failures:
            click.echo(f"FAILED {failure}", err=True)
        click.echo(f"compiled and equal to numpy: {passed} / {len(front)}")
        if failures:
            raise SystemExit(1)


def _echo_stages(front) -> None:
    """One search's stage-by-stage counts and times."""
    from .autoschedule import SparseAutoFront

    if isinstance(front, SparseAutoFront):
        click.echo(f"{'stage':28} {'schedules':>14} {'(time, memory) groups':>22} {'seconds':>9}")
        for stage in front.stages:
            groups = "—" if stage.groups is None else f"{stage.groups:,}"
            click.echo(f"{stage.name:28} {stage.count:>14,} {groups:>22} {stage.seconds:>9.3f}")
        click.echo(f"solver queries: {front.search.solver_queries} ({front.search.solver_unknown} unknown)")
        return
    click.echo(f"{'stage':44} {'count':>10} {'seconds':>9}")
    for stage in front.stages:
        click.echo(f"{stage.name:44} {stage.count:>10,} {stage.seconds:>9.3f}")
    search = front.search
    click.echo(f"programs processed: {search.processed:,} / {search.total:,}"
               + ("" if front.complete else " (time limit reached: the frontier of those processed)"))
    click.echo(f"frontier: {len(front)} programs")


if __name__ == "__main__":
    main()
