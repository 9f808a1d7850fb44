"""What a suite measured, as records the report reads (`--json FILE`): one JSON object a line, appended
as each row is measured, so that the worker processes a suite forks can write to the same file and a
run cut short still leaves what it measured.

Timing records share one shape across suites: `kernel`, `dataset` and `contender` name a measurement,
`seconds` its median (None when it did not finish), `status` why not ("" when timed), and `role` what
the contender is to the (kernel, dataset) group: "ours" (the autosparse contender every other is
compared with), "peer" (another library or hand-written code: where autosparse loses), "variant"
(another autosparse schedule, strategy or thread count) or "bound" (a plain copy of the same bytes: the
memory-traffic floor). Counting suites write `count` records instead (a stage of a search, with the
paper's figure beside).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def add_option(parser) -> None:
    parser.add_argument("--json", metavar="FILE", help="also append every measurement to FILE as JSON lines "
                                                       "(for the report; the file is started afresh)")


class Records:
    def __init__(self, path: str | None):
        self.path = path
        if path:
            Path(path).write_text("")

    def add(self, kind: str = "timing", **fields: Any) -> None:
        if not self.path:
            return
        line = (json.dumps({"kind": kind, **fields}, default=_plain) + "\n").encode()
        with open(self.path, "ab") as file:  # one write of one line: lines from forked workers never interleave
            os.write(file.fileno(), line)

    def timing(self, kernel: str, dataset: str, contender: str, seconds: float | None, *, role: str = "peer",
               status: str = "", **extra: Any) -> None:
        self.add(kernel=kernel, dataset=dataset, contender=contender, seconds=seconds, role=role,
                 status=status if seconds is not None or status else "not timed", **extra)


def source_hash(kernel) -> str:
    """The first 12 hex digits of the SHA-256 of a compiled kernel's C: which code a time belongs to."""
    return hashlib.sha256(kernel.source.encode()).hexdigest()[:12]


def _plain(value):
    """numpy scalars and anything else printable, as JSON can hold them."""
    return value.item() if hasattr(value, "item") else str(value)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
