"""Nothing outside autosparse/format tests a level's kind (format/level.py's promise): the compiler asks a
level's properties and capabilities, so a registered level plug-in works everywhere a built-in one does.
An ast scan of the package finds isinstance/type tests against a level class and reads of a level's
letter or spelling outside an error message."""

from __future__ import annotations

import ast
from pathlib import Path

import autosparse
from autosparse.format import Level

PACKAGE = Path(autosparse.__file__).parent
KIND_ATTRIBUTES = {"letter", "spelling"}


def _level_classes(cls: type = Level) -> set[str]:
    """The names of every level plug-in class, built in or registered."""
    return {name for sub in cls.__subclasses__() for name in (sub.__name__, *_level_classes(sub))}


def _named_classes(node: ast.expr) -> set[str]:
    """The class names in the second argument of isinstance (a name, an attribute or a tuple of them)."""
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return {p.id if isinstance(p, ast.Name) else p.attr for p in parts if isinstance(p, (ast.Name, ast.Attribute))}


def kind_tests(source: str, level_classes: set[str]) -> list[int]:
    """The lines of `source` that test a level's kind: isinstance or type() against a level class, or
    a level's letter or spelling read for anything but a message (an f-string)."""
    tree = ast.parse(source)
    in_messages = {id(n) for s in ast.walk(tree) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2 \
                and node.func.id in ("isinstance", "issubclass") and _named_classes(node.args[1]) & level_classes:
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Call) and isinstance(o.func, ast.Name) and o.func.id == "type" for o in operands) \
                    and any(_named_classes(o) & level_classes for o in operands):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in KIND_ATTRIBUTES and id(node) not in in_messages:
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_finds_each_way_of_testing_a_kind():
    classes = {"Dense", "Compressed"}
    source = ("a = isinstance(level, Compressed)\nb = isinstance(level, (int, fmt.Dense))\n"
              "c = level.letter == 'h'\nd = fmt.levels[0].spelling in ('s', 'u')\ne = type(level) in (Dense,)\n"
              "f = level.properties.full\ng = isinstance(level, int)\nh = f'{level.letter}'\n"
              "letters = [level.letter for level in fmt.levels]\n")
    assert kind_tests(source, classes) == [1, 2, 3, 4, 5, 9]


def test_no_module_outside_format_tests_a_level_kind():
    classes = _level_classes()
    assert {"Dense", "Compressed", "Singleton", "Hashed", "Triangular"} <= classes
    found = [f"{path.relative_to(PACKAGE)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "format"
             for line in kind_tests(path.read_text(), classes)]
    assert not found, f"level kinds tested by class or letter (ask LevelProperties/Capability instead): {found}"
