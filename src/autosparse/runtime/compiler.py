"""The system C compiler: C source file → shared object, and the toolchain identity in cache keys.

A kernel is only reusable by the same compiler on the same kind of CPU (it is built with
`-march=native`), so both go into its cache key. Finding the compiler's version means running
`cc --version`, which costs milliseconds; the answer is remembered in the cache directory against
the compiler file's path, modification time and size, so a process that only loads cached kernels
starts no compiler at all.

With $AUTOSPARSE_SANITIZE, kernels are built with AddressSanitizer and UndefinedBehaviorSanitizer;
their flags enter the cache key like any others. An instrumented library needs the sanitizer's runtime
loaded before anything else in the process (`LD_PRELOAD`), which `sanitizer_runtime_problem` checks.
"""

from __future__ import annotations

import ctypes
import errno
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
#: -fopenmp-simd: OpenMP's `simd` pragmas (schedule/autovector.py's sums over lanes), without its runtime.
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-fwrapv", "-fopenmp-simd")
#: Floating-point contraction (`config.fp_contract`), named either way: `-std=c11` turns it off in gcc,
#: but clang contracts within a statement unless told `off`. An explicit flag wins over `-std`'s default.
CONTRACT_FLAGS = {True: "-ffp-contract=fast", False: "-ffp-contract=off"}
OPENMP_FLAGS = ("-fopenmp",)
SANITIZER_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")
LIBRARIES = ("-lm",)
# ASan's runtime must be the process's first library; libstdc++ must be loaded before ASan starts, or ASan's
# interceptor of C++ throws finds no real one and aborts the process at the first exception Z3 throws
_SANITIZER_PRELOAD = ("libasan.so", "libstdc++.so.6")
_SANITIZER_ENTRY = "__asan_init"  # defined in a process where the ASan runtime is loaded
# what the compiler prints (in the C locale it is run in) when the disk, not the kernel, is the problem
_FULL_DISK = {os.strerror(code): code for code in (errno.ENOSPC, errno.EDQUOT)}


@dataclass(frozen=True)
class Compiler:
    """How to run the compiler (its path, then any arguments $CC puts before ours) and what it is."""

    argv: tuple[str, ...]
    version: str


def compile_flags(openmp: bool, sanitize: bool, contract: bool) -> tuple[str, ...]:
    return (*FLAGS, CONTRACT_FLAGS[contract], *(OPENMP_FLAGS if openmp else ()), *(SANITIZER_FLAGS if sanitize else ()))


def sanitizer_runtime_problem(compiler: Compiler) -> str | None:
    """Why this process cannot load sanitized kernels (None if it can): ASan's runtime must come first."""
    if hasattr(ctypes.CDLL(None), _SANITIZER_ENTRY):
        return None
    return (f"AUTOSPARSE_SANITIZE=1 builds kernels with AddressSanitizer, whose runtime must be loaded before "
            f"Python starts: run it as LD_PRELOAD='{sanitizer_preload(compiler)}' ASAN_OPTIONS=detect_leaks=0 "
            f"python ...")


def sanitizer_preload(compiler: Compiler) -> str:
    """What LD_PRELOAD must hold for sanitized kernels: the compiler's own ASan runtime, then libstdc++
    (a name it cannot find is printed bare)."""
    return " ".join(_run((*compiler.argv, f"-print-file-name={name}")).stdout.strip() for name in _SANITIZER_PRELOAD)


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
    """Build `library_file` from `source` (written at `source_file`); messages name `shown_as` instead.
    `CompileError` if the compiler rejects it; `OSError` if the disk filled up while it wrote."""
    command = (*compiler.argv, *flags, "-o", str(library_file), str(source_file), *LIBRARIES)
    done = _run(command, source)
    if done.returncode != 0:
        _raise_if_disk_full(done.stdout, library_file)
        raise CompileError(
            f"the C compiler rejected a kernel (source kept at {shown_as}); "
            f"{shlex.join(command)} exited with status {done.returncode}:",
            source, command, done.stdout.replace(str(source_file), str(shown_as)),
        )
    return command


def _raise_if_disk_full(output: str, library_file: Path) -> None:
    """The runtime answers a full disk by building elsewhere, so it must not look like a rejected kernel."""
    for message, code in _FULL_DISK.items():
        if message in output:
            raise OSError(code, f"{message} while the C compiler wrote {library_file}")


def _run(command: tuple[str, ...], source: str = "") -> subprocess.CompletedProcess[str]:
    try:  # in the C locale, so that what it prints can be read
        return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
                              env={**os.environ, "LC_ALL": "C"})
    except OSError as error:  # found on PATH, yet not runnable
        raise CompileError(f"cannot run the C compiler {command[0]}: {error}", source, command) from None
