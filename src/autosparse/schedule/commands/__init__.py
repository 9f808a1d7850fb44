"""The scheduling commands (Senanayake et al. §4), one class each, registered by name in `COMMANDS`.

    reorder(i, k, j)                     the directly nested loops over these indices, in this order
    precompute(expr, i, iw[, format])    expr into a temporary indexed by iw, read at i by the rest
    parallelize(i, unit, race)           OpenMP threads or SIMD lanes over loop i, races handled by `race`
    unroll(i, n)                         ask the C compiler to unroll loop i n times
    coiterate(i, strategy[, tensor])     how loop i meets its operands: merge, gallop, binary, hash, bitmap, auto
    split, divide, collapse, pos, coord, bound    new index variables (`derive.py`)
    loopfuse(loc, pol, path)             SparseAuto's fusion of a branched nest

Each command checks its preconditions and raises `ScheduleError` naming the command, the index variable
and the rule it breaks. Storage-order violations that only lowering can see (a sparse operand stepped
against its storage order) are reported by lowering, also as `ScheduleError`.

Every module of this package is imported here, so a command is added by writing its class, decorated
with `@command`, in a module of its own or beside its family: the parser and `Schedule.apply` find it
by name.
"""

import importlib
import pkgutil

from .base import COMMANDS, Command, Path, ScheduleCommand, command, lookup

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["COMMANDS", "Command", "Path", "ScheduleCommand", "command", "lookup"]
