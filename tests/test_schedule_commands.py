"""Scheduling commands as data: each command is one registered class that reads its written arguments,
prints itself as users write it, and rewrites CIN; a class registered from outside the package is a
command of the language at once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

import autosparse as asp
from autosparse.cin import parse_cin
from autosparse.errors import ParseError
from autosparse.notation.ast import IndexVar
from autosparse.schedule import Schedule
from autosparse.schedule.commands import COMMANDS, ScheduleCommand, command
from autosparse.schedule.commands.base import Arity, read_index
from autosparse.schedule.commands.rewrite import find_loop, replace_node

#: one written instance of every command (their own names: reading needs no statement)
WRITTEN = ["reorder(i, k, j)", "reorder(m, k, n, j, path=[1])", "precompute(A(i,k) * B(k,j), j, jw)",
           "precompute(A(i,k) * B(k,j), j, jw, h)", "parallelize(i, cpu_thread, atomics)", "unroll(j, 4)",
           "coiterate(j, gallop)", "coiterate(j, binary, B)", "split(i, i0, i1, 32)", "divide(i, i0, i1, 4)",
           "collapse(i, j, f)", "pos(i, ip, A(i,j))", "coord(ip, i)", "bound(i, ib, 64, max_exact)",
           "loopfuse(2, true, [1, 0])"]


def test_every_command_of_the_language_is_registered_once_by_its_name():
    assert sorted(COMMANDS) == ["bound", "coiterate", "collapse", "coord", "divide", "loopfuse", "parallelize", "pos",
                                "precompute", "reorder", "split", "unroll"]
    assert all(cls.name == name and issubclass(cls, ScheduleCommand) for name, cls in COMMANDS.items())
    assert {text.split("(")[0] for text in WRITTEN} == set(COMMANDS)


@pytest.mark.parametrize("text", WRITTEN)
def test_a_command_read_from_text_prints_as_written(text):
    (written,) = Schedule.parse(text).commands
    assert str(COMMANDS[written.name].read(written)) == text


def test_only_parallelize_ends_a_schedule():
    assert [name for name, cls in COMMANDS.items() if cls.ends_schedule] == ["parallelize"]


@pytest.mark.parametrize("arity, text", [(Arity(2, 2), "2"), (Arity(2, 3), "2 to 3"), (Arity(2, None), "2 or more")])
def test_an_arity_says_how_many_arguments(arity, text):
    assert str(arity) == text and arity.admits(2) and not arity.admits(1)
    assert arity.admits(4) == (arity.most is None)


@dataclass(frozen=True)
class Serial(ScheduleCommand):
    """A test-only command: takes a loop's unroll mark off (proof that one class is one command)."""

    name: ClassVar[str] = "serial"
    arity: ClassVar[Arity] = Arity(1, 1)
    index: IndexVar

    @classmethod
    def read(cls, written):
        return cls(read_index(written.args[0], written))

    def apply(self, stmt, relations):
        loop = find_loop(stmt, self.index, f"serial({self.index})")
        return replace_node(stmt, loop, replace(loop, unroll=0)), relations


@pytest.fixture
def serial():
    command(Serial)
    yield Serial
    del COMMANDS["serial"]


def test_a_registered_class_is_a_command_of_the_language(serial):
    stmt = parse_cin("∀i ∀j y(i) += A(i,j) * x(j)", {"y": "d", "A": "csr", "x": "d"})
    unrolled = Schedule.parse("unroll(j, 4)").apply(stmt)
    assert str(unrolled) != str(stmt)
    assert str(Schedule.parse("unroll(j, 4); serial(j)").apply(stmt)) == str(stmt)
    with pytest.raises(ParseError, match="Expected 1 arguments to serial, but found 2"):
        Schedule.parse("serial(i, j)")


def test_a_name_is_registered_once(serial):
    with pytest.raises(TypeError, match="one scheduling command named serial"):
        command(Serial)


def test_an_unregistered_name_is_not_a_command():
    with pytest.raises(ParseError, match=r"Expected a scheduling command \(bound, .*unroll\), but found 'serial'"):
        Schedule.parse("serial(i)")
    assert isinstance(asp.Schedule().unroll("i", 2), Schedule)
