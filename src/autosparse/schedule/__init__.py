"""Scheduling: commands that rewrite concrete index notation, and schedules as values (text or chained)."""

from .commands import Command
from .language import Schedule

__all__ = ["Command", "Schedule"]
