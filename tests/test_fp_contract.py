"""Floating-point contraction: on by default, switched off by `set_fp_contract(False)` or
$AUTOSPARSE_FP_CONTRACT, and a kernel built one way is never loaded for the other."""

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse import config
from autosparse.runtime.compiler import compile_flags

# names no other test uses, so the process-wide memo of specialisations holds none of these kernels yet
SPMM = "Cfma(i,j) = Afma(i,k) * Bfma(k,j)"
MTTKRP = "Mfma(i,j) = Tfma(i,k,l) * Ufma(k,j) * Vfma(l,j)"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty kernel cache, the environment's default, and the setting restored afterwards."""
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AUTOSPARSE_FP_CONTRACT", raising=False)
    yield tmp_path
    asp.set_fp_contract(None)


def _libraries(directory):
    return sorted(path.name for path in directory.glob("*.so"))


def _operands(rng, expression):
    if expression == SPMM:
        a = sp.random(7, 5, density=0.5, format="csr", random_state=rng)
        b = rng.standard_normal((5, 3))
        return {"Afma": asp.Tensor.from_scipy(a), "Bfma": b}, a.toarray() @ b
    t = rng.standard_normal((4, 3, 5)) * (rng.random((4, 3, 5)) < 0.4)
    u, v = rng.standard_normal((3, 6)), rng.standard_normal((5, 6))
    return ({"Tfma": asp.Tensor.from_numpy(t, format="csf"), "Ufma": u, "Vfma": v},
            np.einsum("ikl,kj,lj->ij", t, u, v))


@pytest.mark.parametrize("expression", [SPMM, MTTKRP])
def test_each_setting_is_its_own_cache_entry_and_both_match_numpy(fresh, expression):
    operands, expected = _operands(np.random.default_rng(3), expression)
    built = []
    for on in (True, False):
        asp.set_fp_contract(on)
        assert config.fp_contract() is on
        result = asp.compile(expression, formats={name: getattr(value, "format", "dense")
                                                  for name, value in operands.items()})(**operands)
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-13, atol=1e-13)
        built.append(_libraries(fresh))
    assert len(built[0]) == 1 and len(built[1]) == 2, built  # the second setting compiled a second library


def test_the_environment_switches_it_and_set_fp_contract_overrides_it(fresh, monkeypatch):
    assert config.fp_contract() is True
    for word, on in (("off", False), ("0", False), (" NO ", False), ("on", True), ("1", True), ("", True)):
        monkeypatch.setenv("AUTOSPARSE_FP_CONTRACT", word)
        assert config.fp_contract() is on, word
    monkeypatch.setenv("AUTOSPARSE_FP_CONTRACT", "off")
    asp.set_fp_contract(True)
    assert config.fp_contract() is True
    asp.set_fp_contract(None)
    assert config.fp_contract() is False


@pytest.mark.parametrize("word", ["fast", "2", "offf"])
def test_a_bad_environment_value_is_a_clear_error_where_a_kernel_is_compiled(fresh, monkeypatch, word):
    monkeypatch.setenv("AUTOSPARSE_FP_CONTRACT", word)
    with pytest.raises(asp.AutosparseError, match=f"AUTOSPARSE_FP_CONTRACT.*{word!r}"):
        asp.evaluate("yfma(i) = Afma(i,j) * xfma(j)", Afma=sp.eye(3, format="csr"), xfma=np.ones(3))


@pytest.mark.parametrize("value", ["off", 0, 1, np.bool_(True)])
def test_set_fp_contract_takes_only_a_bool_or_none(fresh, value):
    with pytest.raises(asp.AutosparseError, match="contraction"):
        asp.set_fp_contract(value)


@pytest.mark.parametrize("openmp", [False, True])
@pytest.mark.parametrize("sanitize", [False, True])
def test_the_flag_is_named_either_way(openmp, sanitize):
    """Off is written out: clang contracts within a statement under -std=c11 unless told not to."""
    assert "-ffp-contract=fast" in compile_flags(openmp, sanitize, True)
    assert "-ffp-contract=off" in compile_flags(openmp, sanitize, False)
