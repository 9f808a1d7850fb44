"""Generated kernels keep no global state: threads call one kernel at once (ctypes lets go of the GIL
during the call) and each gets its own right answer; two processes compiling the same new kernel at
once both succeed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from conftest import densified


def test_threads_share_a_kernel():
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    inputs = [sp.random(300, 300, density=0.02, format="csr", random_state=seed) for seed in range(8)]
    expected = [(m @ m).toarray() for m in inputs]
    tensors = [asp.Tensor.from_scipy(m) for m in inputs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: kernel(A=t, B=t), tensors * 3))
    for k, result in enumerate(results):
        np.testing.assert_allclose(densified(result), expected[k % 8])


def test_two_processes_compile_the_same_new_kernel(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, autosparse as asp
        k = asp.compile("q(i) = Fresh(i,j) * z(j)", formats={"Fresh": "dcsr"})
        y = k(Fresh=asp.Tensor.from_numpy(np.eye(3) * 2, "dcsr"), z=np.arange(3.0))
        assert np.allclose(y.to_numpy(), [0.0, 2.0, 4.0]), y.to_numpy()
        print("ok")
    """)
    env = dict(os.environ, AUTOSPARSE_CACHE_DIR=str(tmp_path))
    children = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and out.strip() == "ok", err
    assert len(list(tmp_path.glob("*.so"))) == 1
