"""The letters of format strings and the level plug-ins they stand for.

A new level kind becomes usable everywhere by registering an instance under a letter of its own.
"""

from __future__ import annotations

from ..errors import FormatError
from .compressed import Compressed
from .dense import Dense
from .hashed import Hashed
from .level import Level
from .singleton import Singleton
from .triangular import Triangular

_LEVELS: dict[str, Level] = {
    level.spelling: level
    for level in (Dense(), Compressed(), Compressed(unique=False), Singleton(), Singleton(unique=False), Hashed(),
                  Compressed(order="decreasing"), Compressed(order="unordered"),
                  Compressed(unique=False, order="decreasing"), Compressed(unique=False, order="unordered"),
                  Triangular(), Triangular(upper=True))
}


def register_level(level: Level) -> None:
    """Make `level` spellable by its letter in format strings."""
    letter = level.letter
    if len(letter) != 1 or not letter.isalpha() or not letter.islower():
        raise FormatError(f"Expected a single lower-case letter for a level, but found {letter!r}")
    if _LEVELS.get(letter, level) != level:
        raise FormatError(f"Expected an unused letter, but {letter!r} already means {_LEVELS[letter]!r}")
    _LEVELS[letter] = level


def level_for(spelling: str) -> Level | None:
    """The level a letter, with its variant's mark if any (`s-`), spells."""
    return _LEVELS.get(spelling)


def known_letters() -> str:
    return "".join(sorted(s for s in _LEVELS if len(s) == 1))


def known_marks(letter: str) -> str:
    """The variant marks that may follow `letter`."""
    return "".join(sorted(s[1:] for s in _LEVELS if len(s) > 1 and s[0] == letter))
