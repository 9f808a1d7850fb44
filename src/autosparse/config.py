"""Process-wide settings: the memory limit that guards dense allocations, and the sanitizer mode.

A dense level of a hypersparse tensor (a CSR `pos` for 10⁹ rows) or a dense result can need far more
memory than the machine has. Rather than let numpy fail halfway, or the kernel swap, every allocation
whose size depends on dimensions (not on the number of entries) is checked against this limit first.
"""

from __future__ import annotations

import functools
import os
import resource

from .errors import AutosparseError, MemoryLimitError

_ENV_VAR = "AUTOSPARSE_MEMORY_LIMIT"


@functools.cache
def _default_memory_limit() -> int:
    """Half of what this process may use: the smaller of physical memory and its address-space limit
    (looked up once: every kernel call compares against it)."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    usable = physical if soft == resource.RLIM_INFINITY else min(physical, soft)
    return usable // 2


def _limit_from_environment() -> int | None:
    text = os.environ.get(_ENV_VAR)
    if text is None:
        return None
    try:
        return int(float(text))
    except ValueError:
        raise MemoryLimitError(f"Expected {_ENV_VAR} to be a number of bytes, but found {text!r}") from None


_memory_limit: int | None = _limit_from_environment()


def memory_limit() -> int:
    """The largest single allocation, in bytes, that autosparse makes for dense storage."""
    return _memory_limit if _memory_limit is not None else _default_memory_limit()


def set_memory_limit(nbytes: int | None) -> None:
    """Set the limit in bytes; `None` restores the default (half of the usable memory)."""
    global _memory_limit
    if nbytes is not None and nbytes <= 0:
        raise MemoryLimitError(f"Expected a positive memory limit, but found {nbytes}")
    _memory_limit = nbytes


def check_allocation(nbytes: int, what: str) -> None:
    """Raise `MemoryLimitError` if allocating `nbytes` for `what` would pass the limit."""
    limit = memory_limit()
    if nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {nbytes:,} bytes, more than the memory limit of {limit:,} bytes "
            f"(set {_ENV_VAR} or autosparse.set_memory_limit to change it)"
        )


_SANITIZE_VAR = "AUTOSPARSE_SANITIZE"
_SANITIZE_WORDS = {"": False, "0": False, "false": False, "no": False, "off": False,
                   "1": True, "true": True, "yes": True, "on": True}


def sanitize() -> bool:
    """Whether kernels are built with AddressSanitizer and UndefinedBehaviorSanitizer ($AUTOSPARSE_SANITIZE,
    read on every load): a standing check that generated code stays in bounds, at several times the cost."""
    text = os.environ.get(_SANITIZE_VAR, "")
    try:
        return _SANITIZE_WORDS[text.strip().lower()]
    except KeyError:
        raise AutosparseError(f"Expected {_SANITIZE_VAR} to be 1 or 0, but found {text!r}") from None
