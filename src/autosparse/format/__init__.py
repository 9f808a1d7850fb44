"""Storage formats: level plug-ins (properties, capabilities, numpy storage operations) and Format."""

from .compressed import Compressed
from .dense import Dense
from .hashed import Hashed
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated
from .registry import register_level
from .singleton import Singleton
from .spec import Format, as_format

__all__ = [
    "Capability", "Compressed", "Dense", "Format", "Hashed", "Level", "LevelProperties", "Packed",
    "Singleton", "Unpacked", "Validated", "as_format", "register_level",
]
