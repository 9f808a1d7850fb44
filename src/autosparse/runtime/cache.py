"""The on-disk cache: compiled kernels kept between processes, and the security boundary around them.

Input: a key (the hash of everything that decides a kernel's machine code) → output: the paths of its
`<key>.so`, `<key>.sha256` and `<key>.c` under the cache directory. Compiling takes a tenth of a second
or more; a cached kernel loads in a millisecond. Files appear by `os.replace` of a uniquely named
temporary, so processes sharing the directory never see a half-written file, and the least recently
used entries are evicted once the directory passes a size cap.

Anyone can compute a key, and loading a `.so` runs its code, so the cache is trusted only as ssh
trusts `~/.ssh`: the directory and every file read from it must belong to this user and be writable by
no one else. The directory is created 0700 and files 0600 (libraries 0700) whatever the umask. A
library's SHA-256 is recorded after it is published and checked before each `dlopen`, so a truncated,
partial or swapped file is rebuilt rather than mapped (a truncated mapping dies of SIGBUS). A directory
that fails these checks, or cannot be written, is replaced for this process by a private temporary one.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import hashlib
import json
import os
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path

from ..errors import AutosparseError

_DIR_VAR = "AUTOSPARSE_CACHE_DIR"
_MAX_BYTES_VAR = "AUTOSPARSE_CACHE_MAX_BYTES"
_DEFAULT_MAX_BYTES = 512 * 2**20
_STALE_TEMPORARY_SECONDS = 3600  # a temporary this old was left by a process that died mid-compile
_COMPILERS_FILE = "compilers.json"
_ENTRY_SUFFIXES = (".so", ".sha256", ".c")
PRIVATE_FILE_MODE, PRIVATE_PROGRAM_MODE, _PRIVATE_DIRECTORY_MODE = 0o600, 0o700, 0o700
_OTHERS_MAY_WRITE = stat.S_IWGRP | stat.S_IWOTH


class Entry(enum.Enum):
    """What a cache lookup found for a key."""

    VALID = "valid"
    MISSING = "missing"
    DAMAGED = "damaged"      # unreadable, or its checksum does not match: rebuilt without comment
    UNTRUSTED = "untrusted"  # not this user's, or writable by others: rebuilt, with a warning


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


def directory_problem(directory: Path) -> str | None:
    """Why `directory` cannot hold kernels this process may load (None if it can), creating it 0700 if it
    does not exist yet."""
    try:
        directory.mkdir(mode=_PRIVATE_DIRECTORY_MODE, parents=True)
    except FileExistsError:
        pass
    except OSError as error:
        return f"cannot be created ({error.strerror})"
    else:
        os.chmod(directory, _PRIVATE_DIRECTORY_MODE)  # mkdir's mode passed through the umask
    try:
        found = os.stat(directory)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a directory"
    return _ownership_problem(found)


def _ownership_problem(found: os.stat_result) -> str | None:
    if found.st_uid != os.geteuid():
        return f"belongs to another user (uid {found.st_uid})"
    if found.st_mode & _OTHERS_MAY_WRITE:
        return f"is writable by other users (mode {stat.filemode(found.st_mode)})"
    return None


_fallback: tuple[Path, int] | None = None  # (directory, the process that made it)


def fallback_directory() -> Path:
    """This process's private temporary cache (0700, made by `mkdtemp`), removed when the process exits."""
    global _fallback
    if _fallback is None or _fallback[1] != os.getpid() or not _fallback[0].is_dir():
        _fallback = (Path(tempfile.mkdtemp(prefix="autosparse-")), os.getpid())
        atexit.register(_remove_fallback, *_fallback)
    return _fallback[0]


def _remove_fallback(directory: Path, owner: int) -> None:
    if os.getpid() == owner:  # a forked child that exits normally must not take its parent's kernels
        shutil.rmtree(directory, ignore_errors=True)


def check_entry(directory: Path, key: str) -> Entry:
    """Whether `<key>.so` may be loaded: this user's, writable by no one else, and matching its checksum."""
    try:
        recorded = read_private(directory / f"{key}.sha256")
        library = read_private(directory / f"{key}.so")
    except FileNotFoundError:
        return Entry.MISSING
    except _Untrusted:
        return Entry.UNTRUSTED
    except OSError:
        return Entry.DAMAGED
    return Entry.VALID if recorded.decode(errors="replace") == checksum(library) else Entry.DAMAGED


def read_private(path: Path) -> bytes:
    """The bytes of a regular file that this user owns and no one else may write (checked on the open
    file, so the file checked is the file read); `_Untrusted` otherwise."""
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or _ownership_problem(found):
            raise _Untrusted(path)
        return file.read()


class _Untrusted(OSError):
    """A file in the cache that another user owns or may write: an OSError, so that readers of mere memos
    (compilers.json) treat it as unreadable."""


def checksum(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def record_checksum(directory: Path, key: str, library_file: Path) -> None:
    """Written after the library is in place: a reader that finds a checksum finds the file it describes."""
    write_private(directory / f"{key}.sha256", checksum(library_file.read_bytes()).encode())


def write_private(path: Path, content: bytes) -> None:
    """Put `content` at `path` atomically, as a 0600 file; no temporary stays behind if writing fails."""
    temporary = create_private(path.parent, path.stem, path.suffix, content)
    try:
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def create_private(directory: Path, key: str, suffix: str, content: bytes) -> Path:
    """A new temporary file holding `content`, 0600 whatever the umask; removed again if writing fails."""
    path = temporary_path(directory, key, suffix)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        with open(descriptor, "wb") as file:
            os.fchmod(file.fileno(), PRIVATE_FILE_MODE)
            file.write(content)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


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
    with contextlib.suppress(OSError):  # a memo: an unwritable directory only costs the next process a run
        write_private(directory / _COMPILERS_FILE, json.dumps(seen, indent=1).encode())


def _read_compilers(directory: Path) -> dict:
    try:
        seen = json.loads(read_private(directory / _COMPILERS_FILE))
    except (OSError, ValueError):  # missing, damaged by hand or not ours: run the compiler again
        return {}
    return seen if isinstance(seen, dict) else {}
