"""The runtime: C source → cached shared object → callable, and kernel-malloc'ed memory → numpy arrays."""

from __future__ import annotations

import ctypes
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autosparse import AutosparseError, CompileError
from autosparse.runtime import adopt, cache_dir, library, load_library

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
