"""Memory safety as a standing check: a slice of the kernel grid built with AddressSanitizer and
UndefinedBehaviorSanitizer (AUTOSPARSE_SANITIZE=1) must run clean and match numpy.

An instrumented library can only be loaded into a process whose first library is ASan's runtime, so the
slice (sanitized_kernels.py) runs in a child Python started with it in LD_PRELOAD, its output uncaptured
(a report goes straight to the real stderr, and the child exits). Leak detection is off: Python keeps
its objects until exit by design. Two canaries first prove that a bad access is caught at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autosparse.runtime.compiler import find_compiler, sanitizer_preload

TESTS = Path(__file__).parent
REPORTS = ("ERROR: AddressSanitizer", "runtime error:")

# Run with the sanitized environment: load `source` through autosparse and call its f(n).
CANARY = textwrap.dedent("""
    import sys
    from autosparse.runtime import load_library
    load_library(sys.argv[1]).f(int(sys.argv[2]))
    print("not caught")
""")
HEAP_OVERFLOW = ("#include <stdlib.h>\n"  # volatile: -O3 would drop a store to memory freed unread
                 "int f(int n) { volatile int *p = malloc(n * sizeof(int)); p[n] = 1; free((void *)p); return 0; }\n")
# kernels build with -fwrapv (int64 wraps as numpy's does), so undefined behaviour is shown by a shift
BAD_SHIFT = "int f(int n) { volatile int s = 30; return 1 << (s + n); }\n"


@pytest.fixture(scope="module")
def preload() -> str:
    """LD_PRELOAD for sanitized kernels; the test is skipped where the compiler has no ASan runtime."""
    found = sanitizer_preload(find_compiler(Path(os.environ["AUTOSPARSE_CACHE_DIR"])))
    runtime = found.split()[0]
    if not (os.path.isabs(runtime) and os.path.exists(runtime)):
        pytest.skip("the C compiler has no AddressSanitizer runtime (libasan)")
    return found


def sanitized_environment(preload: str, cache: Path) -> dict[str, str]:
    return {**os.environ, "LD_PRELOAD": preload, "AUTOSPARSE_SANITIZE": "1", "AUTOSPARSE_CACHE_DIR": str(cache),
            "ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
            "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}


@pytest.mark.parametrize("source, report", [(HEAP_OVERFLOW, "ERROR: AddressSanitizer: heap-buffer-overflow"),
                                            (BAD_SHIFT, "runtime error: shift exponent")],
                         ids=["address", "undefined"])
def test_sanitizers_catch_a_bad_kernel(preload, tmp_path, source, report):
    done = subprocess.run([sys.executable, "-c", CANARY, source, "3"], env=sanitized_environment(preload, tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and report in done.stderr and "not caught" not in done.stdout, done.stderr


def test_kernel_slice_is_clean_under_the_sanitizers(preload, tmp_path):
    """The child's session makes its own cache directory (conftest.py) under its --basetemp."""
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-x", "-p", "no:cacheprovider",
               f"--basetemp={tmp_path / 'child'}", str(TESTS / "sanitized_kernels.py")]
    done = subprocess.run(command, env=sanitized_environment(preload, tmp_path / "cache"), capture_output=True,
                          text=True, timeout=600, cwd=TESTS.parent)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and not any(report in output for report in REPORTS), output[-20000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]
