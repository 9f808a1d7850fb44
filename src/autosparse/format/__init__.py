"""Storage formats: level plug-ins (properties, capabilities, numpy storage operations), Format, and the
layouts stored in a Format of more modes (Layout)."""

from ._checks import segment_starts
from .compressed import Compressed
from .dense import Dense
from .hashed import Hashed
from .layout import Layout
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated
from .registry import register_level
from .singleton import Singleton
from .spec import Format, as_format

__all__ = [
    "Capability", "Compressed", "Dense", "Format", "Hashed", "Layout", "Level", "LevelProperties", "Packed",
    "Singleton", "Unpacked", "Validated", "as_format", "register_level", "segment_starts",
]
