"""The runtime's entry point: C source → loaded shared object, compiled once per cache directory.

Input: the C source of a kernel → output: a `ctypes.CDLL` to call it through. Lookups go from
cheapest to dearest: this process's memo (a dict lookup), the on-disk cache (a checksum and a
`dlopen`), the C compiler (a tenth of a second or more, and its result joins the cache). A library is
loaded from its temporary file before it is published, so a library that cannot be loaded never
enters the cache. A cache directory that is not private to this user, or cannot be written (read-only,
full), never stops a kernel: it is built in a private temporary directory instead, with one
`CacheWarning` per directory and process.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.metadata
import json
import os
import warnings
from pathlib import Path

from ..config import fp_contract, prepare_openmp, sanitize
from ..errors import CacheWarning, CompileError
from .cache import (PRIVATE_PROGRAM_MODE, Entry, cache_dir, check_entry, create_private, directory_problem, evict,
                    fallback_directory, record_checksum, temporary_path, touch)
from .compiler import (SANITIZER_FLAGS, Compiler, compile_flags, compile_library, find_compiler, machine_identity,
                       sanitizer_runtime_problem)

# (source, flags, $CC, cache directory) → library, so a second load in this process is a dict lookup
_loaded: dict[tuple[str, tuple[str, ...], str, Path], ctypes.CDLL] = {}
# (cache directory, what was wrong) that this process has already warned about
_warned: set[tuple[Path, str]] = set()
_UNCACHED = ": kernels are compiled in a private temporary directory instead, and not kept for later processes"


def load_library(source: str, *, openmp: bool = False) -> ctypes.CDLL:
    """The shared object built from C `source` (with `-fopenmp` if `openmp`, the sanitizers if
    $AUTOSPARSE_SANITIZE is set, and contraction as `fp_contract` says); `CompileError` if it won't build
    or load."""
    if openmp:
        prepare_openmp()
    directory, flags = cache_dir(), compile_flags(openmp, sanitize(), fp_contract())
    memo_key = (source, flags, os.environ.get("CC", ""), directory)
    library = _loaded.get(memo_key)
    if library is None:
        library = _loaded[memo_key] = _load(source, flags, directory)
    return library


def _load(source: str, flags: tuple[str, ...], directory: Path) -> ctypes.CDLL:
    problem = directory_problem(directory)
    if problem is not None:
        _warn_once((directory, "directory"), f"the kernel cache {directory} {problem}{_UNCACHED}")
        return _load_uncached(source, flags)
    try:
        return _load_from(source, flags, directory)
    except OSError as error:  # the cache directory is read-only or full
        reason = f"cannot write to the kernel cache {directory} ({_reason(error)})"
        _warn_once((directory, "write"), reason + _UNCACHED)
        return _load_uncached(source, flags)


def _load_uncached(source: str, flags: tuple[str, ...]) -> ctypes.CDLL:
    """Build in this process's private temporary directory: the last resort, so its failure is the user's."""
    try:
        return _load_from(source, flags, fallback_directory())
    except OSError as error:
        raise CompileError(f"cannot build a kernel in a private temporary directory: {_reason(error)}",
                           source) from None


def _reason(error: OSError) -> str:
    return str(error.strerror or error) if error.filename is None else f"{error.strerror}: {error.filename}"


def _load_from(source: str, flags: tuple[str, ...], directory: Path) -> ctypes.CDLL:
    compiler = find_compiler(directory)
    _check_sanitizer_runtime(compiler, flags)
    key = _cache_key(source, compiler, flags)
    library = _cached(directory, key)
    return library if library is not None else _build(source, compiler, flags, directory, key)


def _warn_once(topic: tuple[Path, str], message: str) -> None:
    if topic not in _warned:
        _warned.add(topic)
        warnings.warn(message, CacheWarning, stacklevel=2)


def _check_sanitizer_runtime(compiler: Compiler, flags: tuple[str, ...]) -> None:
    """A sanitized library loaded without its runtime aborts the process: refuse with the remedy instead."""
    problem = SANITIZER_FLAGS[0] in flags and sanitizer_runtime_problem(compiler)
    if problem:
        raise CompileError(problem)


def _cached(directory: Path, key: str) -> ctypes.CDLL | None:
    """The library cached under `key`, if its file passes its checks and loads."""
    entry = check_entry(directory, key)
    if entry is Entry.UNTRUSTED:
        _warn_once((directory, "file"), f"the kernel cache {directory} holds files that are not private to this "
                                        f"user (such as {key}.so): they are not loaded but rebuilt")
    if entry is not Entry.VALID:
        return None
    try:
        library = ctypes.CDLL(str(directory / f"{key}.so"))
    except OSError:  # evicted just now, or built for a runtime this process lacks: build it again
        return None
    touch(directory / f"{key}.so")
    return library


def _build(source: str, compiler: Compiler, flags: tuple[str, ...], directory: Path, key: str) -> ctypes.CDLL:
    """Compile into `directory` and publish `<key>.so`, its checksum and its source; `OSError` if the
    directory cannot take them (then nothing of this build is left there but a kept source)."""
    source_file, library_file = directory / f"{key}.c", directory / f"{key}.so"
    source_temporary = create_private(directory, key, ".c", source.encode())
    library_temporary = temporary_path(directory, key, ".so")
    try:
        command = compile_library(compiler, flags, source, source_temporary, library_temporary, source_file)
        os.chmod(library_temporary, PRIVATE_PROGRAM_MODE)
        library = _open_new(library_temporary, source, command, source_file)
        os.replace(library_temporary, library_file)
        record_checksum(directory, key, library_file)
    finally:
        library_temporary.unlink(missing_ok=True)
        _keep_source(source_temporary, source_file)
    with contextlib.suppress(OSError):  # eviction is housekeeping: a failure must not lose the kernel
        evict(directory, keep=key)
    return library


def _open_new(library_file: Path, source: str, command: tuple[str, ...], shown_as: Path) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(library_file))
    except OSError as error:  # e.g. a call to a function that no library defines
        raise CompileError(f"the compiled kernel cannot be loaded (source kept at {shown_as}):",
                           source, command, str(error)) from None


def _keep_source(temporary: Path, source_file: Path) -> None:
    """Keep the source for reading, whether or not it compiled; if even that fails, leave no temporary."""
    try:
        os.replace(temporary, source_file)
    except OSError:
        temporary.unlink(missing_ok=True)


def _cache_key(source: str, compiler: Compiler, flags: tuple[str, ...]) -> str:
    """Everything that decides the machine code: source, flags, compiler, CPU and autosparse's own version."""
    parts = [source, compiler.argv[1:], flags, compiler.version, machine_identity(), _autosparse_version()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


@functools.cache
def _autosparse_version() -> str:
    try:
        return importlib.metadata.version("autosparse")
    except importlib.metadata.PackageNotFoundError:
        return "0"
