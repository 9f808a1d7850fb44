"""The packages of src/autosparse follow the pipeline's floors: none imports a package above its own
floor, not even inside a function, and no packages import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1] / "src" / "autosparse"

#: Top to bottom; a package may import its own floor (without a cycle) and the floors below it.
#: "__init__" is the facade, autosparse/__init__.py.
FLOORS = (
    ("cli", "__init__"),
    ("distributed",),
    ("array",),
    ("api",),
    ("autoschedule",),
    ("pipeline",),
    ("lower",),
    ("schedule", "coiterate", "runtime", "io"),
    ("cin", "tensor"),
    ("notation", "format"),
    ("errors", "codegen", "config"),
)
FLOOR = {package: floor for floor, packages in enumerate(FLOORS) for package in packages}


def module_names(root: Path) -> dict[str, Path]:
    """Every module under `root` by dotted name (a package by its own name, not `.__init__`)."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = ("autosparse", *path.relative_to(root).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules `module` imports anywhere in its file, relative imports resolved; `from p import m`
    names the module p.m where m is one."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.module, node.level)
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
    return {name for name in found if name == "autosparse" or name.startswith("autosparse.")}


def _absolute(module: str, is_package: bool, target: str | None, level: int) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[:len(anchor) - (level - 1)]
    return ".".join([*anchor, target] if target else anchor)


def package_of(module: str) -> str:
    """`autosparse.lower.kernel` -> lower; `autosparse.cli` -> cli; `autosparse` -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Package -> the other packages it imports."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        source = package_of(module)
        targets = {package_of(name) for name in imported(module, path, modules)}
        graph.setdefault(source, set()).update(targets - {source})
    return graph


def violations(graph: dict[str, set[str]], floor: dict[str, int] = FLOOR) -> list[str]:
    """Every package on no floor, every edge upward, and every cycle, in words."""
    found = [f"{package} is on no floor" for package in sorted(graph) if package not in floor]
    found += [f"{source} (floor {floor[source]}) imports {target} (floor {floor[target]})"
              for source in sorted(graph) for target in sorted(graph[source])
              if source in floor and target in floor and floor[target] < floor[source]]
    found += [f"cycle among {', '.join(sorted(component))}" for component in _cycles(graph)]
    return found


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one package (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components, key=sorted)


def test_the_floors_name_each_package_once():
    names = [package for packages in FLOORS for package in packages]
    assert len(names) == len(set(names))


def test_an_upward_edge_a_cycle_and_a_stray_package_are_found():
    floor = {"top": 0, "a": 1, "b": 1, "bottom": 2}
    graph = {"top": {"a"}, "a": {"b", "bottom"}, "b": {"a"}, "bottom": set(), "stray": {"top"}}
    assert violations(graph, floor) == ["stray is on no floor", "cycle among a, b"]
    graph["bottom"] = {"top"}
    assert violations(graph, floor) == ["stray is on no floor", "bottom (floor 2) imports top (floor 0)",
                                        "cycle among a, b, bottom, top"]


def test_imports_inside_functions_and_relative_imports_are_edges(tmp_path):
    package = tmp_path / "autosparse"
    for folder in ("lower", "api", "errors"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "lower" / "kernel.py").write_text("def f():\n    from ..api import compile\n")
    (package / "errors" / "names.py").write_text("from .. import lower\nimport autosparse.api.kernel\n")
    assert package_graph(package) == {"__init__": set(), "lower": {"api"}, "api": set(),
                                      "errors": {"lower", "api"}}


def test_no_package_imports_above_its_floor_or_in_a_circle():
    found = violations(package_graph())
    assert not found, "layering violations:\n  " + "\n  ".join(found)


def private_reaches(root: Path = ROOT) -> list[str]:
    """Every import of another package's private module or private name (`format._checks`,
    `from ..api.kernel import _memo`): what a package offers the others is what it names publicly."""
    modules = module_names(root)
    found = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            base = _absolute(module, is_package, node.module, node.level)
            if not base.startswith("autosparse.") or package_of(base) == package_of(module):
                continue
            names = [*base.split(".")[2:], *(alias.name for alias in node.names)]
            if any(name.startswith("_") for name in names):
                found.append(f"{module} imports {', '.join(a.name for a in node.names)} from {base}")
    return found


def test_a_private_name_is_reached_only_from_its_own_package(tmp_path):
    package = tmp_path / "autosparse"
    for folder in ("format", "tensor"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "format" / "_checks.py").write_text("")
    (package / "format" / "spec.py").write_text("from ._checks import x\n")  # its own package: fine
    (package / "tensor" / "a.py").write_text("from ..format._checks import x\nfrom ..format.spec import _y, z\n")
    assert private_reaches(package) == ["autosparse.tensor.a imports x from autosparse.format._checks",
                                        "autosparse.tensor.a imports _y, z from autosparse.format.spec"]


def test_no_package_reaches_a_private_name_of_another():
    found = private_reaches()
    assert not found, "private names reached across packages:\n  " + "\n  ".join(found)
