"""Fronts and choices kept between processes: an expression's candidates (per model and formats) and the
one chosen for a size class of operands, as JSON in the kernel cache directory's `autoschedule/`.

A search takes seconds to minutes and a selection milliseconds, but both decide the same way for the
same expression, formats and sizes, so a later process reads what an earlier one decided instead.

What is stored is JSON, never code or pickles: an asymptotic candidate's sketch (its program before
formats, from which realisation re-derives its CIN, formats and costs exactly as the search made them),
another model's CIN with the formats of the tensors it names, and for a reader each one's CIN text and
cost. Reading it back re-derives the candidate, whose CIN must print as the stored text and compute the
expression (`check_computes`), so a file edited by hand can make a choice worse but never a result
wrong. The cache's rules apply (see
runtime/cache.py): the directory is private, a file another user owns or may write is not read, files
appear atomically; a file missing, damaged, foreign or for another key is ignored (searched again).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
from functools import cached_property
from pathlib import Path
from typing import Mapping

from ..cin import ast as cin_ast
from ..cin.ast import Assign, Forall, Protocol, Where
from ..cin.check import check_computes
from ..cin.parser import parse_cin
from ..errors import AutosparseError
from ..format import Format
from ..notation import ast as notation
from ..notation.ast import Literal
from ..notation.operators import FUNCTIONS
from ..runtime.cache import cache_dir, directory_problem, read_private, write_private
from .asymptotic.cost import CostModel
from .asymptotic.sketch import Access, Call, Sum
from .candidate import Candidates, CinCandidate, DefaultCandidate, KernelFactory, ScheduleCandidate, cost_model
from .front import Candidate
from .table import model_cost

#: Bumped when what is stored changes meaning; part of every key, with autosparse's version.
STORE_VERSION = 1

#: Everything reading a stored file may raise on a file damaged or written by hand: it is then ignored.
_UNREADABLE = (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, AutosparseError)


class StoredFront(Candidates):
    """A front read back from the store: its candidates re-derived when first used (a process that
    finds its choice stored too never parses them), each record that fails its checks left out."""

    def __init__(self, assignment: notation.Assignment, formats: Mapping[str, Format], records: list,
                 complete: bool, kernel_factory: KernelFactory, fills: Mapping[str, object] = {}):
        self.assignment, self.formats, self.kernel_factory = assignment, dict(formats), kernel_factory
        self.fills = dict(fills)
        self.records, self.complete = records, complete

    search = None

    @property
    def stages(self) -> list:
        return []  # no search ran in this process

    @property
    def digest(self) -> str:
        """What names this front among the searches stored under its key (`save_front`'s answer)."""
        return _digest(self.records)

    @cached_property
    def candidates(self) -> list[ScheduleCandidate]:
        model = cost_model(self.assignment, self.formats, self.fills)
        found = (_checked(record, self.assignment, self.formats, model) for record in self.records)
        return [cand for cand in found if cand is not None]


def front_key(model: str, assignment: notation.Assignment, formats: Mapping[str, Format],
              fills: Mapping[str, object] = {}) -> list:
    """What decides a front: the model, the expression (its operators by name, as written), every tensor's
    format, the operands' fills other than 0 (as text: `inf`, `True`) and the versions."""
    key = [STORE_VERSION, _version(), model, str(assignment), sorted([n, str(f)] for n, f in formats.items())]
    return key + [sorted([n, str(f)] for n, f in fills.items())] if fills else key


def load_front(key: list, assignment: notation.Assignment, formats: Mapping[str, Format],
               kernel_factory: KernelFactory, fills: Mapping[str, object] = {}) -> StoredFront | None:
    found = _read(key)
    if found is None or not isinstance(found.get("candidates"), list):
        return None
    return StoredFront(assignment, formats, found["candidates"], bool(found.get("complete")), kernel_factory, fills)


def save_front(key: list, front: Candidates) -> str:
    """Store `front` under `key` (replacing what an earlier search stored there); its digest, which a
    choice made from it is stored with, so a front searched again does not serve choices made from the
    one it replaced."""
    records = [_record(cand) for cand in front]
    if records:  # an empty front is not kept: a later process searches again
        _write(key, {"complete": bool(getattr(front, "complete", True)), "candidates": records})
    return _digest(records)


def _digest(records: list) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()[:16]


def load_choice(key: list, assignment: notation.Assignment, formats: Mapping[str, Format]) -> ScheduleCandidate | None:
    """The candidate stored under `key` (a front's key and a size class), re-derived; None when absent or
    unusable."""
    found = _read(key)
    return None if found is None else _checked(found.get("choice"), assignment, formats,
                                               cost_model(assignment, formats))


def save_choice(key: list, cand: ScheduleCandidate) -> None:
    _write(key, {"choice": _record(cand)})


def _record(cand: ScheduleCandidate) -> dict:
    """A candidate as JSON: an asymptotic one by its sketch (from which realisation re-derives its CIN,
    formats and costs exactly), any other by its CIN and the formats of the tensors it names; both with
    the CIN text and cost text for a reader."""
    stmt = cand.cin
    record = {"found_by": cand.found_by, "cin": str(stmt), "cost": model_cost(cand)}
    if isinstance(cand, Candidate):
        return {**record, "sketch": _encoded(cand.sketch)}
    return {**record, "formats": {name: str(var.format) for name, var in cin_ast.tensors(stmt).items()}}


def _checked(record, assignment: notation.Assignment, formats: Mapping[str, Format],
             model: CostModel) -> ScheduleCandidate | None:
    """`_candidate`, or None where the record is damaged or fails its checks."""
    try:
        return _candidate(record, assignment, formats, model)
    except _UNREADABLE:
        return None


def _candidate(record: dict, assignment: notation.Assignment, formats: Mapping[str, Format],
               model: CostModel) -> ScheduleCandidate:
    """The candidate `record` spells, checked: its CIN must print as the stored text and compute
    `assignment`."""
    text = record["cin"]
    if "sketch" in record:
        sketch = _decoded(record["sketch"])
        cand = Candidate(sketch, model.cost(sketch), assignment, dict(formats), model)
        stmt = cand.cin
    else:
        stmt = parse_cin(text, {name: str(fmt) for name, fmt in record["formats"].items()})
        all_formats = {name: var.format for name, var in cin_ast.tensors(stmt).items()}
        made = DefaultCandidate if record["found_by"] == DefaultCandidate.found_by else CinCandidate
        cand = made(stmt, all_formats, dict(formats), model, str(record["found_by"]), str(record["cost"]))
    if str(stmt) != text:
        raise ValueError(f"stored CIN {text!r} is now {str(stmt)!r}")
    check_computes(stmt, assignment)
    return cand


def _encoded(node):
    """A sketch as nested JSON lists, tagged by node kind."""
    match node:
        case Forall():
            return ["forall", node.index, _encoded(node.body)]
        case Where():
            return ["where", _encoded(node.consumer), _encoded(node.producer)]
        case Assign():
            return ["assign", _encoded(node.lhs), _encoded(node.rhs), node.accumulate]
        case Access():
            return ["access", node.tensor, list(node.indices), [p.value for p in node.protocols]]
        case Call():
            return ["call", node.op, [_encoded(a) for a in node.args]]
        case Sum():
            return ["sum", list(node.indices), _encoded(node.body)]
        case Literal(value=complex() as value):
            return ["complex", value.real, value.imag]
        case Literal():
            return ["literal", node.value]
    raise TypeError(f"Expected a sketch node, but found {node!r}")


def _decoded(item):
    """The sketch `_encoded` wrote; ValueError or TypeError for anything else."""
    match item:
        case ["forall", str(index), body]:
            return Forall(index, _decoded(body))
        case ["where", consumer, producer]:
            return Where(_decoded(consumer), _decoded(producer))
        case ["assign", lhs, rhs, bool(accumulate)]:
            return Assign(_decoded(lhs), _decoded(rhs), accumulate)
        case ["access", str(tensor), list(indices), list(protocols)] if all(isinstance(i, str) for i in indices):
            return Access(tensor, tuple(indices), tuple(Protocol(p) for p in protocols))
        case ["call", "*" | "+" | "-" as op, list(args)]:
            return Call(op, tuple(map(_decoded, args)))
        case ["call", str(op), [arg]] if op in FUNCTIONS and FUNCTIONS[op].arity == 1:
            return Call(op, (_decoded(arg),))
        case ["sum", list(indices), body] if all(isinstance(i, str) for i in indices):
            return Sum(tuple(indices), _decoded(body))
        case ["complex", float(real), float(imag)]:
            return Literal(complex(real, imag))
        case ["literal", int() | float() as value] if not isinstance(value, bool):
            return Literal(value)
    raise ValueError(f"Expected a stored sketch node, but found {item!r:.80}")


def _path(key: list) -> Path:
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()
    return cache_dir() / "autoschedule" / f"{digest}.json"


def _read(key: list) -> dict | None:
    """The stored object for `key`: from a private file whose recorded key is `key`, else None."""
    try:
        found = json.loads(read_private(_path(key)))
    except _UNREADABLE:
        return None
    return found if isinstance(found, dict) and found.get("key") == key else None


def _write(key: list, content: dict) -> None:
    """Store `content` under `key`, where the cache directory can take it (a memo: failing to keep it
    only costs a later process a search)."""
    path = _path(key)
    if directory_problem(path.parent.parent) or directory_problem(path.parent):
        return
    with contextlib.suppress(OSError):
        write_private(path, json.dumps({"key": key, **content}, ensure_ascii=False, indent=1).encode())


@functools.lru_cache(maxsize=None)
def _version() -> str:
    """autosparse's version and a digest of the autoschedulers' source: a front found by other code
    (a development checkout changes it without a new version number) is never reused."""
    try:
        version = importlib.metadata.version("autosparse")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return f"{version}+{digest.hexdigest()[:16]}"
