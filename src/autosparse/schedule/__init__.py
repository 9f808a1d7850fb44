"""Scheduling: commands that rewrite concrete index notation, and schedules as values (text or chained)."""

from .language import Command, Schedule

__all__ = ["Command", "Schedule"]
