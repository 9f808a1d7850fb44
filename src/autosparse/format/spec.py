"""Formats: a tensor's storage levels, top to bottom, and the mode each level stores.

Spelling: one letter per level, optionally followed by the 0-based mode it stores ("d1s0" is CSC) and by
a variant's mark ("ds-": CSR with each row's columns decreasing; "ds~": unsorted; "u~q": unsorted COO); a
name for the common formats ("csr", "csc", "dcsr", "dcsc", and, for any order, "dense", "coo", "csf").
Blocked spellings ("bcsr(4)", "ubcsr(2,3)") name layouts (layout.py), not formats: `as_format` reads
both, `Format` refuses a layout.

Equality: Formats are equal when their levels and mode orders are, whatever they were spelt as, and equal
Formats hash alike. A Format also equals each string that spells it (`Format("ds") == "csr" == "ds"`),
a convenience the tests and users rely on; since one Format has several spellings, no hash can agree
with every one, so never mix strings and Formats as keys of one dict or set: read strings with
`as_format` first.
"""

from __future__ import annotations

import functools

import re
from typing import Iterator, Mapping, Sequence

from ..errors import FormatError
from .layout import Layout
from .level import Level
from .registry import known_letters, known_marks, level_for

_FIXED_NAMES = {"csr": "ds", "csc": "d1s0", "dcsr": "ss", "dcsc": "s1s0", "lower": "dt", "upper": "dt^"}


def _coo_letters(order: int) -> str:
    """Non-unique rows, then singletons; the middle ones may repeat a prefix, the last completes it."""
    return {0: "", 1: "u"}.get(order, "u" + "c" * (order - 2) + "q")


_ORDER_NAMES = {"dense": lambda n: "d" * n, "coo": _coo_letters, "csf": lambda n: "s" * n}
_TOKEN = re.compile(r"([a-z])(\d*)([^a-z\d]?)")
_BLOCKED = re.compile(r"(u?)bcsr\((\d+)(?:,\s*(\d+))?\)")
_LARGEST_BLOCK = 2**63 - 1  # block sizes are int64 constants in kernels and index arithmetic in numpy


class Format:
    """An immutable storage format: `Format("d1s0")`, `Format("coo", order=3)`, `Format("ds", mode_order=(1, 0))`,
    `Format([Dense(), Compressed()], mode_order=(1, 0))`."""

    __slots__ = ("_levels", "_mode_order", "_hash")

    def __init__(self, spec: "str | Format | Sequence[Level]", order: int | None = None,
                 mode_order: Sequence[int] | None = None):
        if isinstance(spec, Format):
            if mode_order is not None:
                raise FormatError(f"Expected a mode_order or a Format, but found both ({spec!r})")
            levels, modes = spec.levels, spec.mode_order
        elif isinstance(spec, str) and parse_layout(spec) is not None:
            raise FormatError(f"Expected a format of levels, but {spec!r} is a layout over the format "
                              f"{str(parse_layout(spec).storage)!r}: pass the spelling itself (format={spec!r})")
        elif isinstance(spec, str):
            levels, modes = _parse(spec, order)
            if mode_order is not None:
                if modes is not None:
                    raise FormatError(f"Expected the modes in {spec!r} or in mode_order, but found both")
                modes = mode_order
        elif isinstance(spec, Sequence) and all(isinstance(level, Level) for level in spec):
            levels, modes = tuple(spec), mode_order
        else:
            raise FormatError(f"Expected a format string, a Format or a sequence of levels, but found {spec!r:.80}")
        if modes is None:
            modes = tuple(range(len(levels)))
        self._levels: tuple[Level, ...] = tuple(levels)
        self._mode_order: tuple[int, ...] = tuple(int(m) for m in modes)
        self._hash: int | None = None
        _check_modes(self._mode_order, len(self._levels), str(spec))
        _check_structure(self._levels)
        if order is not None and order != self.order:
            raise FormatError(f"Expected a format of order {order}, but {str(self)!r} has {self.order} levels")

    @property
    def levels(self) -> tuple[Level, ...]:
        return self._levels

    @property
    def mode_order(self) -> tuple[int, ...]:
        """mode_order[l] is the tensor mode that storage level l holds."""
        return self._mode_order

    @property
    def order(self) -> int:
        return len(self._levels)

    @property
    def is_dense(self) -> bool:
        return all(level.properties.full for level in self._levels)

    @property
    def name(self) -> str | None:
        """The name of this format ("csr", "coo", ...), or None when it has none."""
        text = str(self)
        for name, letters in _FIXED_NAMES.items():
            if letters == text:
                return name
        for name, letters_of in _ORDER_NAMES.items():
            if self.order and letters_of(self.order) == text:
                return name
        return None

    def __iter__(self) -> Iterator[Level]:
        return iter(self._levels)

    def __len__(self) -> int:
        return len(self._levels)

    def __eq__(self, other: object) -> bool:
        """Equal to a Format of the same levels and mode order, or to a string that spells one (see the
        module's note on hashing)."""
        if isinstance(other, str):
            try:
                other = Format(other, order=self.order) if other in _ORDER_NAMES else Format(other)
            except FormatError:
                return False
        return isinstance(other, Format) and (self._levels, self._mode_order) == (other._levels, other._mode_order)

    def __hash__(self) -> int:
        """Hashed once: a warm kernel call whose operands alternate between signatures looks the Format up
        again on every call, and hashing its levels in Python cost 0.8 µs."""
        if self._hash is None:
            self._hash = hash((self._levels, self._mode_order))
        return self._hash

    def __reduce__(self):
        """Pickled without its cached hash: strings (the levels' names) hash differently in another process."""
        return Format, (self._levels, None, self._mode_order)

    def __str__(self) -> str:
        if self._mode_order == tuple(range(self.order)):
            return "".join(level.spelling for level in self._levels)
        return "".join(f"{level.letter}{mode}{level.spelling[1:]}" for level, mode in zip(self._levels, self._mode_order))

    def __repr__(self) -> str:
        return f"Format({str(self)!r})"


def as_format(spec: "str | Format | Layout", order: int) -> "Format | Layout":
    """A format (or a layout, for a blocked spelling) for a tensor of `order` modes, from a string, a
    name, a Format or a Layout."""
    if isinstance(spec, str):
        return _from_text(spec, order)
    if isinstance(spec, (Format, Layout)):
        return _of_order(spec, order)
    return Format(spec, order=order)


@functools.lru_cache(maxsize=256)  # the same few spellings come on every call (`to_format("csc")`, `format=`)
def _from_text(spec: str, order: int) -> "Format | Layout":
    layout = parse_layout(spec)
    return Format(spec, order=order) if layout is None else _of_order(layout, order)


def _of_order(spec: "Format | Layout", order: int) -> "Format | Layout":
    if spec.order != order:
        unit = "modes" if isinstance(spec, Layout) else "levels"
        raise FormatError(f"Expected a format of order {order}, but {str(spec)!r} has {spec.order} {unit}")
    return spec


def parse_layout(spec: str) -> Layout | None:
    """The layout a blocked spelling names ("bcsr(4)", "ubcsr(2,3)"), or None for any other text."""
    blocked = _BLOCKED.fullmatch(spec.strip().lower())
    if blocked is None:
        return None
    rows, cols = int(blocked.group(2)), int(blocked.group(3) or blocked.group(2))
    if not (1 <= rows <= _LARGEST_BLOCK and 1 <= cols <= _LARGEST_BLOCK):
        raise FormatError(f"Expected positive block sizes below 2**63 (int64) in {spec!r}")
    return Layout(Format("dsdd"), (rows, cols), (False, bool(blocked.group(1))))


def _parse(spec: str, order: int | None) -> tuple[tuple[Level, ...], tuple[int, ...] | None]:
    text = spec.strip().lower()
    if text in _FIXED_NAMES:
        text = _FIXED_NAMES[text]
    elif text in _ORDER_NAMES:
        if order is None:
            raise FormatError(f"Expected an order for the format {spec!r}, e.g. Format({spec!r}, order=2)")
        text = _ORDER_NAMES[text](order)
    levels, modes, column = [], [], 0
    while column < len(text):
        match = _TOKEN.match(text, column)
        if match is None:
            raise FormatError(f"Expected a level letter at column {column + 1} of {spec!r}, "
                              f"but found {text[column]!r}")
        if level_for(match.group(1)) is None:
            raise FormatError(f"Expected a level letter ({known_letters()}) at column {column + 1} of {spec!r}, "
                              f"but found {match.group(1)!r}")
        level = level_for(match.group(1) + match.group(3))
        if level is None:
            marks = known_marks(match.group(1))
            raise FormatError(f"Expected {f'one of the marks {marks!r} or ' if marks else ''}no mark after level "
                              f"letter {match.group(1)!r} at column {match.start(3) + 1} of {spec!r}, but found "
                              f"{match.group(3)!r}")
        levels.append(level)
        modes.append(int(match.group(2)) if match.group(2) else None)
        column = match.end()
    given = [m is not None for m in modes]
    if any(given) and not all(given):
        raise FormatError(f"Expected a mode after every level letter or after none in {spec!r}")
    return tuple(levels), (tuple(modes) if all(given) and modes else None)


def _check_modes(modes: tuple[int, ...], order: int, spec: str) -> None:
    if len(modes) != order:
        raise FormatError(f"Expected {order} modes in the mode order of {spec!r}, but found {len(modes)}")
    if sorted(modes) != list(range(order)):
        raise FormatError(f"Expected the modes of {spec!r} to be a permutation of 0..{order - 1}, "
                          f"but found {list(modes)}")


def _check_structure(levels: tuple[Level, ...]) -> None:
    """A branchless (singleton) level needs a non-unique parent, and below a non-unique level only
    singletons follow, to the last level: each entry's path continues one-to-one from there (COO)."""
    for index, level in enumerate(levels):
        misplaced = level.placement_error(index, levels)
        if misplaced:
            raise FormatError(misplaced)
        parent = levels[index - 1] if index else None
        if level.properties.branchless and (parent is None or parent.properties.unique):
            raise FormatError(f"Expected a non-unique level (u or c) above the singleton level {index}, "
                              f"but found {'none' if parent is None else repr(parent.letter)}")
        above = [i for i, level_above in enumerate(levels[:index]) if not level_above.properties.unique]
        if above and not level.properties.branchless:
            raise FormatError(f"Expected only singleton levels (q or c) below the non-unique level {above[0]}, "
                              f"but found {level.letter!r} at level {index}")


def format_mapping(formats) -> dict:
    """`formats` as a dict of tensor name -> format (None: no formats given)."""
    if formats is None:
        return {}
    if not isinstance(formats, Mapping):
        raise FormatError(f"Expected formats as a mapping of tensor names to formats, such as {{'A': 'csr'}}, "
                          f"but found {type(formats).__name__}")
    return dict(formats)
