"""Formats: spelling, names, printing, equality, level properties, and the errors of bad spellings."""

from __future__ import annotations

import pytest

import autosparse as asp
from autosparse.format import Capability, Compressed, Dense, Hashed, Singleton


@pytest.mark.parametrize("spec,levels,modes,text", [
    ("csr", (Dense(), Compressed()), (0, 1), "ds"),
    ("csc", (Dense(), Compressed()), (1, 0), "d1s0"),
    ("dcsr", (Compressed(), Compressed()), (0, 1), "ss"),
    ("dcsc", (Compressed(), Compressed()), (1, 0), "s1s0"),
    ("d1s0", (Dense(), Compressed()), (1, 0), "d1s0"),
    ("d0s1", (Dense(), Compressed()), (0, 1), "ds"),
    ("uq", (Compressed(unique=False), Singleton()), (0, 1), "uq"),
    ("ucq", (Compressed(unique=False), Singleton(unique=False), Singleton()), (0, 1, 2), "ucq"),
    ("h", (Hashed(),), (0,), "h"),
    ("s2d0h1", (Compressed(), Dense(), Hashed()), (2, 0, 1), "s2d0h1"),
    ("  CSR ", (Dense(), Compressed()), (0, 1), "ds"),
])
def test_parse_and_print(spec, levels, modes, text):
    fmt = asp.Format(spec)
    assert fmt.levels == levels
    assert fmt.mode_order == modes
    assert str(fmt) == text
    assert repr(fmt) == f"Format({text!r})"
    assert asp.Format(text) == fmt and hash(asp.Format(text)) == hash(fmt)


@pytest.mark.parametrize("name,order,text", [
    ("dense", 1, "d"), ("dense", 3, "ddd"), ("csf", 3, "sss"), ("coo", 1, "u"), ("coo", 2, "uq"),
    ("coo", 4, "uccq"), ("dense", 0, ""),
])
def test_order_generic_names(name, order, text):
    fmt = asp.Format(name, order=order)
    assert str(fmt) == text
    assert fmt.order == order
    if order:
        assert fmt.name == name or (name, order) == ("csf", 2)


def test_names_equality_and_hashing():
    assert asp.Format("d1s0").name == "csc"
    assert asp.Format("sd").name is None
    assert asp.Format("csr") == "csr" and asp.Format("csr") == "ds" and asp.Format("csr") != "csc"
    assert asp.Format("sss") == "csf" and asp.Format("ddd") == "dense"
    assert asp.Format("csr") != "not a format"
    assert len({asp.Format("csr"), asp.Format("ds"), asp.Format("d0s1"), asp.Format("csc")}) == 2
    assert asp.Format("csr") != asp.Format("csc")


def test_level_properties_and_capabilities():
    dense, compressed, singleton, hashed = Dense(), Compressed(), Singleton(unique=False), Hashed()
    assert dense.properties.full and dense.properties.ordered and dense.properties.unique
    assert Capability.LOCATE in dense.capabilities and Capability.COORDINATE_ITERATION in dense.capabilities
    assert not compressed.properties.full and compressed.properties.ordered
    assert Capability.APPEND in compressed.capabilities and Capability.LOCATE not in compressed.capabilities
    assert not Compressed(unique=False).properties.unique
    assert singleton.properties.branchless and not singleton.properties.unique
    assert not hashed.properties.ordered and hashed.properties.unique and not hashed.properties.compact
    assert {Capability.LOCATE, Capability.INSERT} <= hashed.capabilities
    assert [level.array_names for level in (dense, compressed, singleton, hashed)] == [
        (), ("pos", "crd"), ("crd",), ("pos", "crd")]


@pytest.mark.parametrize("spec,order,message", [
    ("dx", None, "at column 2 .* found 'x'"),
    ("d s", None, "column 2"),
    ("d1s", None, "after every level letter or after none"),
    ("d1s1", None, "permutation of 0..1"),
    ("d0s2", None, "permutation"),
    ("q", None, "non-unique level .* above the singleton level 0"),
    ("sq", None, "non-unique level .* above the singleton level 1"),
    ("dq", None, "above the singleton"),
    ("us", None, "only singleton levels .* below the non-unique level 0, but found 's' at level 1"),
    ("ud", None, "below the non-unique level"),
    ("uqs", None, "below the non-unique level 0, but found 's' at level 2"),
    ("dcq", None, "above the singleton level 1"),
    ("ducd", None, "below the non-unique level 1, but found 'd' at level 3"),
    ("dense", None, "Expected an order"),
    ("coo", None, "Expected an order"),
    ("csr", 3, "order 3"),
    ("ds", 1, "order 1"),
])
def test_bad_spellings(spec, order, message):
    with pytest.raises(asp.FormatError, match=message):
        asp.Format(spec, order=order)


def test_mode_order_argument():
    assert asp.Format("ds", mode_order=(1, 0)) == asp.Format("csc")
    assert asp.Format([Dense(), Compressed()], mode_order=[1, 0]) == asp.Format("csc")
    with pytest.raises(asp.FormatError, match="found both"):
        asp.Format("d1s0", mode_order=(1, 0))
    with pytest.raises(asp.FormatError, match="permutation"):
        asp.Format("ds", mode_order=(0, 0))
    with pytest.raises(asp.FormatError, match="found both"):
        asp.Format(asp.Format("ds"), mode_order=(1, 0))
    assert asp.Format(asp.Format("d1s0")) == asp.Format("csc")


def test_unknown_letter_names_the_known_ones():
    with pytest.raises(asp.FormatError, match=r"level letter \(\w*c\w*d\w*h\w*q\w*s\w*u\w*\) at column 2 .* 'z'"):
        asp.Format("dz")


def test_register_level_rejects_taken_and_bad_letters():
    with pytest.raises(asp.FormatError, match="already means"):
        asp.register_level(_Renamed("d"))
    with pytest.raises(asp.FormatError, match="single lower-case letter"):
        asp.register_level(_Renamed("D"))
    asp.register_level(Dense())  # registering the same level again is harmless


class _Renamed(Dense):
    """A dense level under another letter, for the registry's checks."""

    __slots__ = ("_letter",)

    def __init__(self, letter):
        object.__setattr__(self, "_letter", letter)

    @property
    def letter(self):
        return self._letter
