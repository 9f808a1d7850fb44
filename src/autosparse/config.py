"""Process-wide settings: the memory limit that guards dense allocations, the number of threads kernels
run on, floating-point contraction, and the sanitizer mode.

A dense level of a hypersparse tensor (a CSR `pos` for 10⁹ rows) or a dense result can need far more
memory than the machine has. Rather than let numpy fail halfway, or the kernel swap, every allocation
whose size depends on dimensions (not on the number of entries) is checked against this limit first.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import resource

from .errors import AutosparseError, MemoryLimitError, ScheduleError

_ENV_VAR = "AUTOSPARSE_MEMORY_LIMIT"
_ENV_KEY = os.fsencode(_ENV_VAR)


def _environment_value(name: bytes) -> bytes | None:
    """The variable `name` as the process has it now, read from the table behind `os.environ`, which every
    write through it (`os.environ[...] = `, pytest's `monkeypatch.setenv`) updates: a kernel call reads
    two variables, and `os.environ.get` encodes the name and decodes the value each time (0.7 µs),
    where the table's lookup takes 0.05 µs. That table is CPython's (`_Environ._data`): an `os.environ`
    without one (replaced by a plain mapping) is read the documented way."""
    table = getattr(os.environ, "_data", None)
    if table is not None:
        return table.get(name)
    text = os.environ.get(os.fsdecode(name))
    return None if text is None else os.fsencode(text)


@functools.cache
def _default_memory_limit() -> int:
    """Half of what this process may use: the smaller of physical memory and its address-space limit
    (looked up once: every kernel call compares against it)."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    usable = physical if soft == resource.RLIM_INFINITY else min(physical, soft)
    return usable // 2


_memory_limit: int | None = None  # set by set_memory_limit; None: the environment's, else the default


def memory_limit() -> int:
    """The largest single allocation, in bytes, that autosparse makes for dense storage."""
    if _memory_limit is not None:
        return _memory_limit
    text = _environment_value(_ENV_KEY)
    return _default_memory_limit() if text is None else _limit_from_text(text)


def set_memory_limit(nbytes: int | None) -> None:
    """Set the limit in bytes; `None` restores the default (`AUTOSPARSE_MEMORY_LIMIT` when set, else half
    of the usable memory)."""
    global _memory_limit
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral)
                               or nbytes <= 0):
        raise MemoryLimitError(f"Expected a positive integer number of bytes as the memory limit, but found {nbytes!r}")
    _memory_limit = None if nbytes is None else int(nbytes)


@functools.cache
def _limit_from_text(raw: bytes) -> int:
    """The environment's limit: read when first needed (a mistake there is reported where a limit is
    used, not as a failed import), and refused unless it is a finite number of at least one byte."""
    text = os.fsdecode(raw)
    try:
        nbytes = int(text) if text.strip().lstrip("+-").isdigit() else float(text)
    except ValueError:
        nbytes = math.nan
    if not math.isfinite(nbytes) or nbytes < 1:
        raise MemoryLimitError(f"Expected {_ENV_VAR} to be a positive, finite number of bytes, but found {text!r}")
    return int(nbytes)


def check_allocation(nbytes: int, what: str) -> None:
    """Raise `MemoryLimitError` if allocating `nbytes` for `what` would pass the limit."""
    limit = memory_limit()
    if nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {nbytes:,} bytes, more than the memory limit of {limit:,} bytes "
            f"(set {_ENV_VAR} or autosparse.set_memory_limit to change it)"
        )


_SANITIZE_VAR = "AUTOSPARSE_SANITIZE"
_SWITCH_WORDS = {"0": False, "false": False, "no": False, "off": False,
                 "1": True, "true": True, "yes": True, "on": True}
_SANITIZE_WORDS = {"": False, **_SWITCH_WORDS}


def sanitize() -> bool:
    """Whether kernels are built with AddressSanitizer and UndefinedBehaviorSanitizer ($AUTOSPARSE_SANITIZE,
    read on every load): a standing check that generated code stays in bounds, at several times the cost."""
    text = os.environ.get(_SANITIZE_VAR, "")
    try:
        return _SANITIZE_WORDS[text.strip().lower()]
    except KeyError:
        raise AutosparseError(f"Expected {_SANITIZE_VAR} to be 1 or 0, but found {text!r}") from None


_CONTRACT_VAR = "AUTOSPARSE_FP_CONTRACT"
_CONTRACT_KEY = os.fsencode(_CONTRACT_VAR)

_fp_contract: bool | None = None  # set by set_fp_contract; None: the environment's, else on


def fp_contract() -> bool:
    """Whether kernels compiled from now on fuse `a * b + c` into one multiply-add that rounds once
    (`-ffp-contract=fast`): `set_fp_contract`'s choice, else $AUTOSPARSE_FP_CONTRACT, else on. On is
    faster where a loop gathers and accumulates (MTTKRP, SpMM, TTM, SDDMM), rounds no worse, and is what
    C compilers in their GNU modes, MKL and the bench's C references do; off gives the unfused loop's
    results bit for bit, as two roundings in the source's order."""
    if _fp_contract is not None:
        return _fp_contract
    text = _environment_value(_CONTRACT_KEY)
    return True if text is None else _contract_from_text(text)


def set_fp_contract(on: bool | None) -> None:
    """Turn contraction on or off for kernels compiled from now on; `None` restores the default
    ($AUTOSPARSE_FP_CONTRACT when set, else on). `compile` builds the new way; `evaluate` and the operators
    keep the kernels they already built for an expression and its operands' kinds (their warm calls do not
    read the setting), so set it before the kernels it is meant for are first used."""
    global _fp_contract
    if on is not None and not isinstance(on, bool):
        raise AutosparseError(f"Expected True, False or None for floating-point contraction, but found {on!r}")
    _fp_contract = on


@functools.cache
def _contract_from_text(raw: bytes) -> bool:
    """The environment's choice: read when first needed (a mistake there is reported where a kernel is
    compiled, not as a failed import); empty means the default."""
    text = os.fsdecode(raw)
    word = text.strip().lower()
    if not word:
        return True
    try:
        return _SWITCH_WORDS[word]
    except KeyError:
        raise AutosparseError(f"Expected {_CONTRACT_VAR} to be on or off (1 or 0), but found {text!r}") from None


#: The most OpenMP threads a kernel may ask for: more than the cores of any machine it is built for,
#: far fewer than the 100,000 whose stacks and per-thread temporaries crash the process.
MAX_THREADS = 1024
_THREADS_VAR = "AUTOSPARSE_NUM_THREADS"
_THREADS_KEY = os.fsencode(_THREADS_VAR)

_num_threads: int | None = None  # set by set_num_threads; None: the environment's, else the cores available


def num_threads() -> int:
    """How many threads a kernel compiled without `num_threads=` runs on: `set_num_threads`'s count, else
    $AUTOSPARSE_NUM_THREADS, else the cores this process may run on (its affinity, not the machine's:
    a container or `taskset` given two cores gets two threads, not one per core it cannot use). One in a
    process forked after OpenMP kernels were loaded (`forked_after_openmp`)."""
    if _forked_after_openmp:
        return 1
    if _num_threads is not None:
        return _num_threads
    text = _environment_value(_THREADS_KEY)
    return len(os.sched_getaffinity(0)) if text is None else _threads_from_text(text)


def set_num_threads(count: int | None) -> None:
    """Set the threads of kernels compiled from now on without `num_threads=`; `None` restores the default
    ($AUTOSPARSE_NUM_THREADS when set, else the cores available)."""
    global _num_threads
    _num_threads = None if count is None else checked_thread_count(count)


def checked_thread_count(count) -> int:
    """A thread count, checked before any C is written: it is pasted into the kernel's OpenMP clauses."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or not 1 <= count <= MAX_THREADS:
        raise ScheduleError(f"Expected num_threads to be None or a positive integer of at most {MAX_THREADS}, "
                            f"but found {count!r}")
    return int(count)


@functools.cache
def _threads_from_text(raw: bytes) -> int:
    """The environment's count: read when first needed (a mistake there is reported where a kernel is
    compiled, not as a failed import)."""
    text = os.fsdecode(raw)
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or not 1 <= int(digits) <= MAX_THREADS:
        raise ScheduleError(f"Expected {_THREADS_VAR} to be a whole number of threads from 1 to {MAX_THREADS}, "
                            f"but found {text!r}")
    return int(text)


_WAIT_VAR = "OMP_WAIT_POLICY"


def prepare_openmp() -> None:
    """Before an OpenMP kernel loads: unless the user chose $OMP_WAIT_POLICY, threads with nothing to do
    sleep rather than spin (libgomp reads it once, when it is first loaded). A spinning thread keeps its
    core between kernel calls and at each barrier, which on cores shared with other work costs far more
    than it saves: on 2 busy cores, SpMV over 1 M nonzeros took 21 ms on 2 spinning threads, 3.1 ms on
    one and 0.94 ms on 2 sleeping ones; on 2 idle cores sleeping costs about 15 µs more per call."""
    global _openmp_loaded
    _openmp_loaded = True
    os.environ.setdefault(_WAIT_VAR, "passive")


_openmp_loaded = False  # an OpenMP kernel was loaded into this process (`prepare_openmp`)
_forked_after_openmp = False  # this process was forked from one that had: its kernels run on one thread


def forked_after_openmp() -> bool:
    """Whether this process was forked from one that had loaded OpenMP kernels. libgomp's threads do not
    survive `fork`: a parallel region on more than one thread in the child waits for them forever (seen in
    gdb), while a region on one thread runs. So such a child runs every kernel on one thread:
    `num_threads()` answers 1 there, and the pipeline's Kernels built before the fork drop to one thread."""
    return _forked_after_openmp


def _after_fork_in_child() -> None:
    global _forked_after_openmp
    _forked_after_openmp = _forked_after_openmp or _openmp_loaded


os.register_at_fork(after_in_child=_after_fork_in_child)
