"""The system C compiler: C source file → shared object, and the toolchain identity in cache keys.

A kernel is only reusable by the same compiler on the same kind of CPU (it is built with
`-march=native`), so both go into its cache key. Finding the compiler's version means running
`cc --version`, which costs milliseconds; the answer is remembered in the cache directory against
the compiler file's path, modification time and size, so a process that only loads cached kernels
starts no compiler at all.
"""

from __future__ import annotations

import functools
import os
import platform
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError
from .cache import remember_version, remembered_version

#: -fwrapv: int64 values wrap on overflow, as numpy's int64 arrays do, where C would leave it undefined.
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-fwrapv")
OPENMP_FLAGS = ("-fopenmp",)
LIBRARIES = ("-lm",)


@dataclass(frozen=True)
class Compiler:
    """How to run the compiler (its path, then any arguments $CC puts before ours) and what it is."""

    argv: tuple[str, ...]
    version: str


def compile_flags(openmp: bool) -> tuple[str, ...]:
    return FLAGS + OPENMP_FLAGS if openmp else FLAGS


def find_compiler(directory: Path) -> Compiler:
    """The compiler $CC names (else `cc`), as found on PATH; `CompileError` if there is none."""
    return _find_compiler(os.environ.get("CC", ""), directory)


@functools.cache
def _find_compiler(cc: str, directory: Path) -> Compiler:
    words = shlex.split(cc) or ["cc"]
    found = shutil.which(words[0])
    if found is None:
        raise CompileError(f"no C compiler found: install gcc or set CC (looked for {words[0]!r} on PATH)")
    argv = (found, *words[1:])
    # keyed by the path found, not the file it links to: ccache's `gcc` and `clang` links are one file
    stat = os.stat(found)
    stamp = f"{os.path.realpath(found)}:{stat.st_mtime_ns}:{stat.st_size}"
    version = remembered_version(directory, found, stamp)
    if version is None:
        command = argv + ("--version",)
        done = _run(command)
        if done.returncode != 0:
            raise CompileError(f"{shlex.join(command)} failed: is CC a C compiler?", "", command, done.stdout)
        version = done.stdout.strip()
        remember_version(directory, found, stamp, version)
    return Compiler(argv, version)


@functools.cache
def machine_identity() -> str:
    """The CPU's architecture and feature flags: what `-march=native` builds for."""
    features = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:  # the first processor's flags are enough; stop before reading the rest
                name, _, value = line.partition(":")
                if name.strip() in ("flags", "Features"):
                    features = " ".join(sorted(value.split()))
                    break
    except OSError:  # not Linux: the architecture (and the compiler's version) must do
        pass
    return f"{platform.machine()} {features}"


def compile_library(compiler: Compiler, flags: tuple[str, ...], source: str, source_file: Path,
                    library_file: Path, shown_as: Path) -> tuple[str, ...]:
    """Build `library_file` from `source` (written at `source_file`); messages name `shown_as` instead."""
    command = (*compiler.argv, *flags, "-o", str(library_file), str(source_file), *LIBRARIES)
    done = _run(command, source)
    if done.returncode != 0:
        raise CompileError(
            f"the C compiler rejected a kernel (source kept at {shown_as}); "
            f"{shlex.join(command)} exited with status {done.returncode}:",
            source, command, done.stdout.replace(str(source_file), str(shown_as)),
        )
    return command


def _run(command: tuple[str, ...], source: str = "") -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    except OSError as error:  # found on PATH, yet not runnable
        raise CompileError(f"cannot run the C compiler {command[0]}: {error}", source, command) from None
