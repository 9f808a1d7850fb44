"""Opening tensor files, gzip-compressed when their name ends in .gz."""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import itertools
import zlib
from pathlib import Path

from ..config import memory_limit
from ..errors import FormatError, MemoryLimitError

# Level 1 writes ten times faster than gzip's default 9, for files about 7% larger.
_COMPRESSION_LEVEL = 1
_CHUNK_BYTES = 1 << 24


def open_file(path: Path, mode: str):
    if path.suffix != ".gz":
        return open(path, mode)
    return gzip.open(path, mode, compresslevel=_COMPRESSION_LEVEL) if "w" in mode else gzip.open(path, mode)


@contextlib.contextmanager
def reading(path: Path):
    """Turns a damaged compressed file (not gzip, corrupt, or cut short) into a `FormatError` naming it;
    the errors of the path itself (missing, a directory, not permitted) stay what they are."""
    try:
        yield
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise FormatError(f"Expected a complete gzip file in {path}, but found: {error}") from None


def read_rest(handle, path: Path, start: bytes = b"") -> bytes:
    """`start` and the rest of the file, read in chunks and refused once they pass the memory limit (a
    small gzip file can unpack to a huge one)."""
    limit, contents = memory_limit(), io.BytesIO()
    for chunk in itertools.chain((start,), iter(functools.partial(handle.read, _CHUNK_BYTES), b"")):
        if contents.tell() + len(chunk) > limit:
            raise MemoryLimitError(f"{path} holds more than the memory limit of {limit:,} bytes")
        contents.write(chunk)
    return contents.getvalue()
