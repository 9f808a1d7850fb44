"""The on-disk cache: compiled kernels kept between processes.

Input: a key (the hash of everything that decides a kernel's machine code) → output: the paths of its
`<key>.so` and `<key>.c` under the cache directory. Compiling takes a tenth of a second or more; a
cached kernel loads in a millisecond. Files appear by `os.replace` of a uniquely named temporary, so
processes sharing the directory never see a half-written file, and the least recently used entries
are evicted once the directory passes a size cap.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path

from ..errors import AutosparseError

_DIR_VAR = "AUTOSPARSE_CACHE_DIR"
_MAX_BYTES_VAR = "AUTOSPARSE_CACHE_MAX_BYTES"
_DEFAULT_MAX_BYTES = 512 * 2**20
_STALE_TEMPORARY_SECONDS = 3600  # a temporary this old was left by a process that died mid-compile
_COMPILERS_FILE = "compilers.json"
_ENTRY_SUFFIXES = (".so", ".c")


def cache_dir() -> Path:
    """$AUTOSPARSE_CACHE_DIR, else $XDG_CACHE_HOME/autosparse, else ~/.cache/autosparse (read on every call)."""
    explicit = os.environ.get(_DIR_VAR)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autosparse"


def max_bytes() -> int:
    """The size cap of the cache directory: $AUTOSPARSE_CACHE_MAX_BYTES, else 512 MiB."""
    text = os.environ.get(_MAX_BYTES_VAR)
    if text is None:
        return _DEFAULT_MAX_BYTES
    try:
        return int(float(text))
    except ValueError:
        raise AutosparseError(f"Expected {_MAX_BYTES_VAR} to be a number of bytes, but found {text!r}") from None


def temporary_path(directory: Path, key: str, suffix: str) -> Path:
    """A name beside the entry that no other process or thread picks; it keeps `suffix` for the compiler."""
    return directory / f"{key}.{os.getpid()}-{secrets.token_hex(6)}.tmp{suffix}"


def touch(path: Path) -> None:
    """Mark an entry as just used, so eviction spares it longest (it may have been evicted meanwhile)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def evict(directory: Path, keep: str) -> None:
    """Delete the least recently used entries until the directory fits the cap; never the entry `keep`."""
    now = time.time()
    sizes: dict[str, int] = {}
    last_used: dict[str, float] = {}
    with os.scandir(directory) as files:
        for file in files:
            with contextlib.suppress(FileNotFoundError):  # another process may be evicting too
                stat = file.stat()
                if ".tmp." in file.name:
                    if now - stat.st_mtime > _STALE_TEMPORARY_SECONDS:
                        os.unlink(file.path)
                    continue
                key, suffix = os.path.splitext(file.name)
                if suffix in _ENTRY_SUFFIXES:
                    sizes[key] = sizes.get(key, 0) + stat.st_size
                    last_used[key] = max(last_used.get(key, 0.0), stat.st_mtime)
    total, cap = sum(sizes.values()), max_bytes()
    for key in sorted(last_used, key=last_used.__getitem__):
        if total <= cap:
            break
        if key != keep:
            for suffix in _ENTRY_SUFFIXES:
                (directory / f"{key}{suffix}").unlink(missing_ok=True)
            total -= sizes[key]


def remembered_version(directory: Path, compiler: str, stamp: str) -> str | None:
    """The version a compiler printed before, if the file at path `compiler` still has the same `stamp`."""
    seen = _read_compilers(directory).get(compiler)
    return seen[1] if isinstance(seen, list) and seen[:1] == [stamp] else None


def remember_version(directory: Path, compiler: str, stamp: str, version: str) -> None:
    """Record what `compiler --version` printed, so that later processes need not run it."""
    seen = _read_compilers(directory)
    seen[compiler] = [stamp, version]
    temporary = temporary_path(directory, "compilers", ".json")
    temporary.write_text(json.dumps(seen, indent=1))
    os.replace(temporary, directory / _COMPILERS_FILE)


def _read_compilers(directory: Path) -> dict:
    try:
        seen = json.loads((directory / _COMPILERS_FILE).read_text())
    except (OSError, ValueError):  # missing, or damaged by hand: run the compiler again
        return {}
    return seen if isinstance(seen, dict) else {}
