"""The runtime: C source → cached shared object → callable, and kernel-malloc'ed memory → numpy arrays."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from autosparse import AutosparseError, CacheWarning, CompileError
from autosparse.runtime import adopt, cache_dir, library, load_library
from autosparse.runtime import cache as cache_module

ADD = "double add(double a, double b) { return a + b; }\n"
MAKE = """
#include <stdint.h>
#include <stdlib.h>
double *make(int64_t n) {
    double *p = malloc(n * sizeof(double));
    for (int64_t i = 0; i < n; i++) p[i] = 0.5 * i;
    return p;
}
"""

# Run in a fresh process: load ADD (or the source given as argv[1]) and print add(2, 3.5).
CHILD = textwrap.dedent("""
    import ctypes, sys
    from autosparse.runtime import load_library
    lib = load_library(sys.argv[1])
    lib.add.restype = ctypes.c_double
    lib.add.argtypes = [ctypes.c_double, ctypes.c_double]
    print(lib.add(2.0, 3.5))
""")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache directory of this test's own, and a process memo that remembers nothing yet."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(directory))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("AUTOSPARSE_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(library, "_loaded", {})
    return directory


def forget_loaded(monkeypatch) -> None:
    """Make this process behave like a fresh one that only has the disk cache."""
    monkeypatch.setattr(library, "_loaded", {})


def add_function(lib: ctypes.CDLL):
    lib.add.restype = ctypes.c_double
    lib.add.argtypes = [ctypes.c_double, ctypes.c_double]
    return lib.add


def entries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith((".so", ".c")))


def logging_compiler(tmp_path: Path, wait_for: int = 1) -> tuple[Path, Path]:
    """A `cc` wrapper that logs each run; a compile waits (up to 10 s) until `wait_for` compiles have started."""
    log, script = tmp_path / "cc.log", tmp_path / "logging-cc"
    log.touch()
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        printf '%s\\n' "$*" >> '{log}'
        case "$*" in *-shared*)
            n=0
            while [ "$(grep -c -- -shared '{log}')" -lt {wait_for} ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done;;
        esac
        exec cc "$@"
    """))
    script.chmod(0o755)
    return script, log


def start_child(source: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, source], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def child_result(child: subprocess.Popen) -> str:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return out.strip()


def test_compiles_calls_and_caches(cache):
    lib = load_library(ADD)
    assert add_function(lib)(2.0, 3.5) == 5.5
    names = entries(cache)
    assert len(names) == 2 and names[0].endswith(".c") and names[1] == names[0][:-2] + ".so"
    assert (cache / names[0]).read_text() == ADD
    assert cache_dir() == cache


def test_second_load_in_a_process_is_the_same_library(cache):
    lib = load_library(ADD)
    for name in os.listdir(cache):
        os.unlink(cache / name)  # the memo, not the disk, answers
    assert load_library(ADD) is lib
    assert load_library(ADD, openmp=True) is not lib


def test_fresh_process_loads_from_disk_without_running_the_compiler(cache, tmp_path):
    compiler, log = logging_compiler(tmp_path)
    assert child_result(start_child(ADD, CC=str(compiler))) == "5.5"
    runs = log.read_text().splitlines()
    assert len(runs) == 2 and runs[0] == "--version" and "-shared" in runs[1]
    assert child_result(start_child(ADD, CC=str(compiler))) == "5.5"
    assert log.read_text().splitlines() == runs  # neither a compile nor `cc --version`


def test_changed_compiler_is_asked_its_version_again(cache, tmp_path, monkeypatch):
    compiler, log = logging_compiler(tmp_path)
    monkeypatch.setenv("CC", str(compiler))
    load_library(ADD)
    compiler.write_text(compiler.read_text() + "# upgraded\n")
    assert child_result(start_child(ADD)) == "5.5"
    assert log.read_text().splitlines().count("--version") == 2


def test_syntax_error_raises_compile_error_with_the_compilers_message(cache):
    source = "double broken(double a) { return a + ; }\n"
    with pytest.raises(CompileError, match="expected expression") as caught:
        load_library(source)
    error = caught.value
    assert error.source == source
    assert "-march=native" in error.command and "-shared" in error.command
    assert "expected expression" in error.output
    kept = [name for name in entries(cache) if name.endswith(".c")]
    assert len(kept) == 1 and kept[0] in str(error) and kept[0] in error.output
    assert not any(name.endswith(".so") for name in entries(cache))
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and copy.output == error.output and copy.command == error.command


def test_long_compiler_output_is_truncated_in_the_message():
    error = CompileError("failed:", "int x;", ("cc",), "e" * 10_000)
    assert len(str(error)) < 4200 and "more characters" in str(error) and len(error.output) == 10_000


@pytest.mark.parametrize("cc", ["/nonexistent/cc", "no-such-compiler-autosparse"])
def test_missing_compiler(monkeypatch, cc):
    monkeypatch.setenv("CC", cc)
    with pytest.raises(CompileError, match="no C compiler found: install gcc or set CC"):
        load_library(ADD)


def test_compiler_that_is_not_one(monkeypatch, tmp_path):
    fake = tmp_path / "fake-cc"
    fake.write_text("#!/bin/sh\necho 'not a compiler' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    with pytest.raises(CompileError, match="not a compiler"):
        load_library(ADD)


def test_library_that_cannot_be_loaded_never_enters_the_cache(cache):
    source = "double undefined_elsewhere(double); double f(double a) { return undefined_elsewhere(a); }\n"
    with pytest.raises(CompileError, match="cannot be loaded.*\n.*undefined_elsewhere"):
        load_library(source)
    assert not any(name.endswith(".so") for name in entries(cache))


def test_openmp(cache):
    source = "#include <omp.h>\nint threads(void) { return omp_get_max_threads(); }\n"
    assert load_library(source, openmp=True).threads() >= 1


def test_truncated_cached_library_is_rebuilt(cache, monkeypatch):
    load_library(ADD)
    [so] = [cache / name for name in entries(cache) if name.endswith(".so")]
    size = so.stat().st_size
    truncated = so.with_suffix(".partial")  # a new file: truncating the loaded one in place would SIGBUS us
    truncated.write_bytes(so.read_bytes()[:100])
    os.replace(truncated, so)
    forget_loaded(monkeypatch)
    assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert so.stat().st_size == size


def test_concurrent_processes_compiling_the_same_kernel_both_succeed(cache, tmp_path):
    compiler, log = logging_compiler(tmp_path, wait_for=2)  # each compile waits until both have started
    children = [start_child(ADD, CC=str(compiler)) for _ in range(2)]
    assert [child_result(child) for child in children] == ["5.5", "5.5"]
    assert sum("-shared" in run for run in log.read_text().splitlines()) == 2
    # .so, .sha256, .c and compilers.json; no temporaries
    assert len(entries(cache)) == 2 and len(os.listdir(cache)) == 4


def test_size_cap_evicts_least_recently_used(cache, monkeypatch):
    def kernel(name: str) -> str:
        return f"double {name}(double a) {{ return a * 2; }}\n"

    def entry_size(key: str) -> int:
        return sum((cache / f"{key}{suffix}").stat().st_size for suffix in (".so", ".sha256", ".c"))

    load_library(kernel("a"))
    key_a = entries(cache)[0][:-2]
    load_library(kernel("b"))
    (key_b,) = {name[:-3] for name in entries(cache) if name.endswith(".so")} - {key_a}
    for key, when in ((key_a, 1_000_000), (key_b, 2_000_000)):
        for suffix in (".so", ".sha256", ".c"):
            os.utime(cache / f"{key}{suffix}", (when, when))
    forget_loaded(monkeypatch)
    load_library(kernel("a"))  # a cache hit makes `a` the more recently used
    assert (cache / f"{key_a}.so").stat().st_mtime > 2_000_000

    monkeypatch.setenv("AUTOSPARSE_CACHE_MAX_BYTES", str(entry_size(key_a) + entry_size(key_b) * 3 // 2))
    load_library(kernel("c"))
    remaining = {name.rsplit(".", 1)[0] for name in entries(cache)}
    assert key_a in remaining and key_b not in remaining and len(remaining) == 2

    monkeypatch.setenv("AUTOSPARSE_CACHE_MAX_BYTES", "1")  # even a cap below one entry keeps the newest
    load_library(kernel("d"))
    assert len(entries(cache)) == 2


def test_bad_size_cap(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_CACHE_MAX_BYTES", "lots")
    with pytest.raises(AutosparseError, match="AUTOSPARSE_CACHE_MAX_BYTES"):
        load_library(ADD)


def test_default_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("AUTOSPARSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "autosparse"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "autosparse"


def make_function():
    make = load_library(MAKE).make
    make.restype, make.argtypes = ctypes.c_void_p, [ctypes.c_int64]
    return make


def test_adopt_wraps_malloced_memory_without_copying():
    address = make_function()(6)
    array = adopt(address, 6, np.float64)
    assert array.dtype == np.float64 and array.flags.writeable
    assert array.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(array, 0.5 * np.arange(6))
    view = array[2:]
    del array  # the view keeps the block alive
    np.testing.assert_array_equal(view, [1.0, 1.5, 2.0, 2.5])


def test_adopt_empty():
    empty = adopt(make_function()(1), 0, np.int32)  # the block is freed, not leaked
    assert empty.shape == (0,) and empty.dtype == np.int32
    assert adopt(0, 0, np.float64).shape == (0,)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads resident memory from /proc")
def test_adopted_memory_is_freed():
    def resident_bytes() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    make, count = make_function(), 2**19  # 4 MiB of doubles each time
    for iteration in range(200):
        array = adopt(make(count), count, np.float64)
        assert array[-1] == 0.5 * (count - 1)
        del array
        if iteration == 10:
            before = resident_bytes()
    assert resident_bytes() - before < 64 * 2**20  # a leak would hold 760 MiB


# ----- the cache as a security boundary ------------------------------------------------------------------------
#
# Tests may run as root, whom permission bits do not stop: an unwritable directory is simulated by a path under
# a regular file or by a failing write, another user's files by `chown` (root only) or a patched `os.geteuid`.

PLANTED = "double add(double a, double b) { return a + b + 100; }\n"


@pytest.fixture(autouse=True)
def fresh_warnings_and_fallback(monkeypatch, tmp_path):
    """Each test warns afresh, and a fallback directory it needs is made under its own temporary folder."""
    monkeypatch.setattr(library, "_warned", set())
    monkeypatch.setattr(cache_module, "_fallback", None)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def cached_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory / name for name in os.listdir(directory) if name.endswith(suffix))


def plant(cache: Path, monkeypatch) -> Path:
    """Replace the cached ADD by a library that adds 100, with a checksum to match: what an attacker who
    can write the directory would leave. Returns the planted file."""
    load_library(PLANTED)
    [real, planted] = sorted(cached_files(cache, ".so"), key=lambda so: so.stem != key_of_add(cache))
    planted_bytes = planted.read_bytes()
    shutil.copyfile(planted, real.with_suffix(".planting"))  # a new file: rewriting a loaded one would SIGBUS us
    os.replace(real.with_suffix(".planting"), real)
    real.with_suffix(".sha256").write_text(hashlib.sha256(planted_bytes).hexdigest())
    forget_loaded(monkeypatch)
    return real


def key_of_add(cache: Path) -> str:
    [source] = [c for c in cached_files(cache, ".c") if c.read_text() == ADD]
    return source.stem


@pytest.mark.parametrize("umask", [0o000, 0o277], ids=["permissive", "restrictive"])
def test_cache_files_are_private_whatever_the_umask(cache, umask):
    previous = os.umask(umask)
    try:
        load_library(ADD)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    modes = {path.suffix: stat.S_IMODE(path.stat().st_mode) for path in cache.iterdir()}
    assert modes == {".so": 0o700, ".sha256": 0o600, ".c": 0o600, ".json": 0o600}


def test_planted_library_in_a_directory_others_can_write_is_not_loaded(cache, monkeypatch):
    load_library(ADD)
    planted = plant(cache, monkeypatch)
    assert add_function(load_library(ADD))(2.0, 3.5) == 105.5  # a private cache trusts what it holds
    forget_loaded(monkeypatch)
    cache.chmod(0o777)
    with pytest.warns(CacheWarning, match="writable by other users.*private temporary directory"):
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert add_function(load_library(PLANTED))(2.0, 3.5) == 105.5  # built again too, without a second warning
    assert planted.read_bytes() == (cache / f"{planted.stem}.so").read_bytes()  # left alone, never loaded


def test_directory_of_another_user_is_not_loaded_from(cache, monkeypatch):
    load_library(ADD)
    plant(cache, monkeypatch)
    before = sorted(os.listdir(cache))
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    with pytest.warns(CacheWarning, match="belongs to another user"):
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert sorted(os.listdir(cache)) == before


@pytest.mark.parametrize("how", ["writable-by-others", "owned-by-another-user"])
def test_cached_library_that_is_not_private_is_rebuilt(cache, monkeypatch, how):
    load_library(ADD)
    planted = plant(cache, monkeypatch)
    if how == "writable-by-others":
        planted.chmod(0o777)
    elif os.geteuid() == 0:
        os.chown(planted, 4242, -1)
    else:
        pytest.skip("only root can give a file to another user")
    with pytest.warns(CacheWarning, match="not private to this user.*not loaded but rebuilt"):
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert planted.stat().st_uid == os.geteuid() and stat.S_IMODE(planted.stat().st_mode) == 0o700


@pytest.mark.parametrize("damage", ["swapped", "checksum-missing", "checksum-garbled"])
def test_library_that_fails_its_checksum_is_rebuilt(cache, monkeypatch, damage):
    load_library(ADD)
    load_library(PLANTED)
    key = key_of_add(cache)
    so, checksum = cache / f"{key}.so", cache / f"{key}.sha256"
    if damage == "swapped":  # another kernel's complete library under this key, without its checksum
        [other] = [path for path in cached_files(cache, ".so") if path != so]
        shutil.copyfile(other, so.with_suffix(".swapping"))
        os.replace(so.with_suffix(".swapping"), so)
    elif damage == "checksum-missing":
        checksum.unlink()
    else:
        checksum.write_text("0" * 64)
    forget_loaded(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # damage is repaired quietly
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert checksum.read_text() == hashlib.sha256(so.read_bytes()).hexdigest()


def test_cache_path_that_cannot_be_a_directory_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(CacheWarning, match="cannot be created") as caught:
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
        assert add_function(load_library(PLANTED))(2.0, 3.5) == 105.5
    assert len(caught) == 1  # once per process
    assert sorted(os.listdir(tmp_path)) == ["file", "tmp"]
    [fallback] = os.listdir(tmp_path / "tmp")
    assert stat.S_IMODE((tmp_path / "tmp" / fallback).stat().st_mode) == 0o700


def test_fallback_directory_is_removed_when_the_process_exits(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = {"AUTOSPARSE_CACHE_DIR": str(blocker / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    child = start_child(ADD, **env)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "5.5", err
    assert err.count("CacheWarning") == 1 and "Traceback" not in err
    assert os.listdir(tmp_path / "tmp") == []


def test_write_that_fails_falls_back_and_leaves_no_temporaries(cache, monkeypatch):
    original = cache_module.create_private

    def refuse_in_cache(directory, *args):
        if directory == cache:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(directory))
        return original(directory, *args)

    monkeypatch.setattr(library, "create_private", refuse_in_cache)
    with pytest.warns(CacheWarning, match="cannot write to the kernel cache.*Read-only file system"):
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert os.listdir(cache) == ["compilers.json"]


def disk_filling_compiler(tmp_path: Path, where: Path) -> Path:
    """A `cc` wrapper that fails as a full disk does when it would write a library under `where`."""
    script = tmp_path / "full-cc"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in *'{where}'*-shared*|*-shared*'{where}'*)
            echo "/usr/bin/ld: final link failed: No space left on device" >&2; exit 1;;
        esac
        exec cc "$@"
    """))
    script.chmod(0o755)
    return script


def test_full_cache_directory_falls_back(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(disk_filling_compiler(tmp_path, cache)))
    with pytest.warns(CacheWarning, match="No space left on device"):
        assert add_function(load_library(ADD))(2.0, 3.5) == 5.5
    assert not [name for name in os.listdir(cache) if ".tmp" in name or name.endswith(".so")]


def test_full_disk_everywhere_is_reported_as_a_full_disk(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(disk_filling_compiler(tmp_path, tmp_path)))
    with pytest.warns(CacheWarning), pytest.raises(CompileError, match="No space left on device") as caught:
        load_library(ADD)
    assert "rejected" not in str(caught.value)
    assert not [name for name in os.listdir(cache) if ".tmp" in name]


# ----- the sanitizer mode ------------------------------------------------------------------------------------------

def test_sanitize_setting_is_checked(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_SANITIZE", "maybe")
    with pytest.raises(AutosparseError, match="AUTOSPARSE_SANITIZE to be 1 or 0, but found 'maybe'"):
        load_library(ADD)


@pytest.mark.skipif(hasattr(ctypes.CDLL(None), "__asan_init"), reason="this process has the ASan runtime")
def test_sanitized_kernel_without_the_runtime_is_refused_with_the_remedy(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_SANITIZE", "1")
    with pytest.raises(CompileError, match="LD_PRELOAD=.*libasan"):
        load_library(ADD)
