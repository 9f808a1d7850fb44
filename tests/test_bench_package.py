"""The benchmarks as a package beside the product (bench/autosparse_bench): the compiler never imports them
nor any peer's private module, and the `autosparse` command loads them by name, saying what is missing
when they are not installed."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

from autosparse import cli

ROOT = Path(__file__).resolve().parents[1]
PRODUCT, BENCH = ROOT / "src" / "autosparse", ROOT / "bench" / "autosparse_bench"


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """Every absolute module name each file under `folder` imports, at any depth of its code."""
    found = {}
    for path in folder.rglob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def private_foreign(module: str, own: str) -> bool:
    """A module of another top-level package reached through a private name (`tensora.compile._x`)."""
    parts = module.split(".")
    return parts[0] not in (own, "__future__") and any(part.startswith("_") for part in parts)


def test_the_product_never_imports_its_benchmarks_nor_a_private_module_of_another_package():
    for path, modules in imported_modules(PRODUCT).items():
        assert not {m for m in modules if m.split(".")[0] == "autosparse_bench"}, path
        assert not {m for m in modules if private_foreign(m, "autosparse")}, path


def test_the_benchmarks_reach_no_peer_through_a_private_module():
    assert imported_modules(BENCH)  # the scan found the suites
    for path, modules in imported_modules(BENCH).items():
        assert not {m for m in modules if private_foreign(m, "autosparse_bench")}, path


def test_bench_without_its_package_says_what_is_missing(monkeypatch):
    monkeypatch.setitem(cli.ELSEWHERE, "bench", "autosparse_bench_not_installed.cli")
    runner = CliRunner()
    listed = runner.invoke(cli.main, ["--help"])
    assert listed.exit_code == 0 and "Not installed: autosparse_bench_not_installed" in listed.output
    refused = runner.invoke(cli.main, ["bench", "kernels", "--quick"])
    assert refused.exit_code == 2 and "needs the autosparse_bench_not_installed package" in refused.output
