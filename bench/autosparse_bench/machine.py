"""What a benchmark runs on and how it shows it is running: the machine line every suite's header and
the report print, and the progress bar long suites draw on stderr (stdout is their Markdown)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tqdm import tqdm

PACKAGES = ("autosparse", "numpy", "scipy", "tensora", "sparse", "sparse_dot_mkl", "mkl", "python-graphblas",
            "suitesparse-graphblas", "matplotlib")


def describe() -> str:
    """CPU model and cores, memory, Python, the C compiler and the versions of the contenders' packages."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
               platform.processor() or "unknown CPU")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if hasattr(os, "sysconf") else 0
    try:
        cc = subprocess.run([os.environ.get("CC", "cc"), "--version"], capture_output=True, text=True,
                            check=False).stdout.splitlines()[:1]
    except OSError:
        cc = []
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return (f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}; {cc[0] if cc else 'no cc'}; " + ", ".join(versions))


def progress(items, what: str):
    """`items`, counted on stderr as they are taken (only on a terminal: a report's log stays clean)."""
    return tqdm(items, desc=what, unit="", file=sys.stderr, disable=None, leave=False)
