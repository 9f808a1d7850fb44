"""A level kind defined only here proves the plug-in interface: registered under a letter, it packs,
unpacks, validates and converts to and from every built-in format with no change to autosparse."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import autosparse as asp
from autosparse.format import Capability, Level, LevelProperties, Packed, Unpacked, Validated


@dataclass(frozen=True, slots=True)
class Bitmap(Level):
    """Dense positions (parent × N + coordinate) with a 0/1 mask saying which coordinates are stored."""

    @property
    def letter(self):
        return "b"

    @property
    def properties(self):
        return LevelProperties(full=False, ordered=True, unique=True, branchless=False, compact=False)

    @property
    def capabilities(self):
        return frozenset({Capability.COORDINATE_ITERATION, Capability.LOCATE, Capability.INSERT})

    @property
    def array_names(self):
        return ("mask",)

    def positions_bound(self, nparents, dim, nentries):
        return nparents * dim

    def pack(self, parent, nparents, coord, dim, index_dtype):
        child = parent.astype(np.int64) * dim + coord
        mask = np.zeros(nparents * dim, dtype=index_dtype)
        mask[child] = 1
        return Packed(arrays={"mask": mask}, child=child, nchildren=nparents * dim)

    def unpack(self, arrays, parents, dim):
        block = arrays["mask"].reshape(-1, dim)[parents]
        owner, coord = np.nonzero(block)
        return Unpacked(owner=owner, child=parents[owner] * dim + coord, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats):
        mask = arrays["mask"]
        if len(mask) != nparents * dim or not np.isin(mask, (0, 1)).all():
            raise asp.FormatError(f"Expected a 0/1 mask of {nparents * dim} entries")
        return Validated(nchildren=nparents * dim, repeats=None)


asp.register_level(Bitmap())


@pytest.mark.parametrize("spec", ["b", "db", "bs", "b1s0", "sbh", "b2b0b1"])
@pytest.mark.parametrize("partner", ["coo", "dense", "csf", "hashed"])
def test_plugin_level_converts_both_ways(spec, partner):
    order = sum(ch.isalpha() for ch in spec)
    rng = np.random.default_rng(order)
    dense = rng.integers(-2, 3, size=(3, 4, 2)[:order]).astype(float)
    tensor = asp.Tensor.from_numpy(dense, spec)
    assert tensor.format.levels[[l.letter for l in tensor.format.levels].index("b")] == Bitmap()
    assert tensor.nnz == np.count_nonzero(dense)
    np.testing.assert_array_equal(tensor.to_numpy(), dense)
    other = tensor.to_format("h" * order if partner == "hashed" else asp.Format(partner, order=order))
    np.testing.assert_array_equal(other.to_numpy(), dense)
    back = other.to_format(spec)
    for mine, theirs in zip(back.levels, tensor.levels):
        for name in mine:
            np.testing.assert_array_equal(mine[name], theirs[name])
    np.testing.assert_array_equal(back.vals, tensor.vals)


def test_plugin_level_validation_is_reported_with_its_level():
    with pytest.raises(asp.FormatError, match=r"Level 1 \(b, mode 1\) of db: Expected a 0/1 mask of 6"):
        asp.Tensor((2, 3), "db", [{}, {"mask": np.array([1, 0, 2, 0, 0, 0])}], np.ones(6))


def test_plugin_level_without_c_code_is_a_schedule_error():
    """Storing works with numpy alone; compiling for a level needs its C fragments, and a level that
    gives none says so."""
    tensor = asp.Tensor.from_numpy(np.eye(3), format="db")
    with pytest.raises(asp.ScheduleError, match="Expected level 'b' to give the C code"):
        asp.evaluate("y(i) = A(i,j) * x(j)", A=tensor, x=np.ones(3))


def test_plugin_level_that_does_not_cut_as_ranges_says_so():
    """Cutting and joining by position ranges are optional: a level that leaves them out (its
    cuts_as_ranges is False, so slicing and partitioning go through its coordinates) answers a direct
    call with a FormatError naming itself."""
    tensor = asp.Tensor.from_numpy(np.arange(12.0).reshape(3, 4) % 3, format="db")
    level = tensor.format.levels[1]
    assert not level.cuts_as_ranges
    with pytest.raises(asp.FormatError, match="level 'b' does not cut as ranges"):
        level.cut({}, 0, 1, 4, False)
    with pytest.raises(asp.FormatError, match="level 'b' does not join as ranges"):
        level.join([], [], np.dtype(np.int32), False)
