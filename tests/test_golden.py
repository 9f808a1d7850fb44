"""Golden files: the C source of a few generated kernels, kept in tests/golden/, so that a change to
lowering or the printer shows up as a reviewable diff of the C it produces (beside the differential tests,
which check only what the kernels compute).

To regenerate after an intended change, run with AUTOSPARSE_REGENERATE_GOLDEN=1 and review the diff:

    AUTOSPARSE_REGENERATE_GOLDEN=1 PYTHONPATH=src python -m pytest -q tests/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import autosparse as asp

GOLDEN = Path(__file__).parent / "golden"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
CSR3 = {"A": "csr", "B": "csr", "C": "csr"}

SPMV = "y(i) = A(i,j) * x(j)"

#: The sequential printer's output is pinned to one thread: with more, the default schedule of SpMV and
#: SpGEMM is parallel (the machine's cores would decide which C a golden holds).
CASES = {
    "spmv_csr": dict(expression=SPMV, formats={"A": "csr", "x": "d", "y": "d"}, num_threads=1),
    "spmv_csr_default_parallel": dict(expression=SPMV, formats={"A": "csr", "x": "d", "y": "d"}, num_threads=2),
    "spgemm_csr_workspace": dict(expression=SPGEMM, formats=CSR3, num_threads=1),
    "add_coo_dcsr": dict(expression="C(i,j) = A(i,j) + B(i,j)", formats={"A": "coo", "B": "dcsr", "C": "dcsr"},
                         num_threads=1),
    "spgemm_csr_parallel": dict(expression=SPGEMM, formats=CSR3, schedule="parallelize(i, cpu_thread, no_races)",
                                num_threads=2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_generated_kernel_is_the_golden_one(name):
    source = asp.compile(**CASES[name]).source
    path = GOLDEN / f"{name}.c"
    if os.environ.get("AUTOSPARSE_REGENERATE_GOLDEN"):
        path.write_text(source)
    assert source == path.read_text(), f"{path.name} differs: regenerate it (see this module's docstring) if intended"


def test_the_spgemm_golden_kernel_assembles_through_a_workspace_and_the_parallel_one_in_a_region():
    """The cases hold what their names say, so the goldens cover those paths."""
    assert "w_mark" in (GOLDEN / "spgemm_csr_workspace.c").read_text()
    assert "#pragma omp parallel" in (GOLDEN / "spgemm_csr_parallel.c").read_text()
    assert "#pragma omp parallel num_threads(2)" in (GOLDEN / "spmv_csr_default_parallel.c").read_text()
