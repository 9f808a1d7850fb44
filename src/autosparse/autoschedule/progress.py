"""A progress bar for the autoschedulers' searches, for callers who pass no `progress` callback.

A search reports `progress(done, total)` as it goes. Most searches end in well under a second, and a bar
that flashes by, or lands in a log or a test's captured output, is noise: the bar is drawn (by tqdm, on
stderr) only when stderr is a terminal or the caller asks, and only once the search has run for
`SHOW_AFTER` seconds. It is removed when the search ends.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from tqdm import tqdm

Progress = Callable[[int, int], None]

#: Seconds a search runs before its bar appears.
SHOW_AFTER = 1.0


@contextmanager
def progress_bar(callback: Progress | None, unit: str, show: bool | None = None,
                 after: float = SHOW_AFTER) -> Iterator[Progress | None]:
    """`callback` itself when the caller gave one; otherwise a callback that draws a bar counting
    `unit` when `show` (by default: stderr is a terminal), or None (nothing to report to)."""
    if callback is not None:
        yield callback
        return
    if not (sys.stderr.isatty() if show is None else show):
        yield None
        return
    bar = tqdm(unit=f" {unit}", leave=False, delay=after, mininterval=0.25, file=sys.stderr)

    def report(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield report
    finally:
        bar.close()
