"""The runtime's entry point: C source → loaded shared object, compiled once per cache directory.

Input: the C source of a kernel → output: a `ctypes.CDLL` to call it through. Lookups go from
cheapest to dearest: this process's memo (a dict lookup), the on-disk cache (a `dlopen`), the C
compiler (a tenth of a second or more, and its result joins the cache). A library is loaded from its
temporary file before it is published, so a library that cannot be loaded never enters the cache.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import json
import os
from pathlib import Path

from ..errors import CompileError
from .cache import cache_dir, evict, temporary_path, touch
from .compiler import Compiler, compile_flags, compile_library, find_compiler, machine_identity

# (source, openmp, $CC, cache directory) → library, so a second load in this process is a dict lookup
_loaded: dict[tuple[str, bool, str, Path], ctypes.CDLL] = {}


def load_library(source: str, *, openmp: bool = False) -> ctypes.CDLL:
    """The shared object built from C `source` (with `-fopenmp` if `openmp`); `CompileError` if it won't build."""
    directory = cache_dir()
    memo_key = (source, openmp, os.environ.get("CC", ""), directory)
    library = _loaded.get(memo_key)
    if library is None:
        library = _loaded[memo_key] = _load(source, compile_flags(openmp), directory)
    return library


def _load(source: str, flags: tuple[str, ...], directory: Path) -> ctypes.CDLL:
    directory.mkdir(parents=True, exist_ok=True)
    compiler = find_compiler(directory)
    key = _cache_key(source, compiler, flags)
    library_file = directory / f"{key}.so"
    if library_file.exists():
        try:
            library = ctypes.CDLL(str(library_file))
        except OSError:  # truncated or corrupt (or evicted just now): build it again
            library_file.unlink(missing_ok=True)
        else:
            touch(library_file)
            return library
    return _build(source, compiler, flags, directory, key)


def _build(source: str, compiler: Compiler, flags: tuple[str, ...], directory: Path, key: str) -> ctypes.CDLL:
    source_file, library_file = directory / f"{key}.c", directory / f"{key}.so"
    source_temporary = temporary_path(directory, key, ".c")
    library_temporary = temporary_path(directory, key, ".so")
    source_temporary.write_text(source)
    try:
        command = compile_library(compiler, flags, source, source_temporary, library_temporary, source_file)
        try:
            library = ctypes.CDLL(str(library_temporary))
        except OSError as error:  # e.g. a call to a function that no library defines
            raise CompileError(f"the compiled kernel cannot be loaded (source kept at {source_file}):",
                               source, command, str(error)) from None
        os.replace(library_temporary, library_file)
    finally:
        library_temporary.unlink(missing_ok=True)
        os.replace(source_temporary, source_file)  # kept for reading, whether or not it compiled
    evict(directory, keep=key)
    return library


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
