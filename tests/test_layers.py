"""Imports follow the pipeline (README, Layout): measurement never imports modeling,
refinement, reporting or diagnosis; the diagnosis does not import the figures; the one
module that knows the results layout is apmt.layout."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "apmt"
MEASUREMENT = ("apmt.collect", "apmt.ingest", "apmt.probe")
ABOVE_MEASUREMENT = ("apmt.model", "apmt.predict", "apmt.fit", "apmt.fit_table", "apmt.varpro",
                     "apmt.series", "apmt.kernels", "apmt.nesting", "apmt.comm", "apmt.loggp",
                     "apmt.trust",
                     "apmt.evaluate", "apmt.modelers", "apmt.baselines", "apmt.extrap_peer",
                     "apmt.refine", "apmt.rounds", "apmt.report", "apmt.diagnose",
                     "apmt.oneoff", "apmt.cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every apmt module a file imports, at any level."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("apmt"):
            found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("apmt")}
    return found


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("module", [m for m in MODULES if within(m, MEASUREMENT)])
def test_measurement_imports_nothing_above_it(module: str) -> None:
    wrong = sorted(name for name in imports(MODULES[module]) if within(name, ABOVE_MEASUREMENT))
    assert not wrong, f"{module} imports {wrong}"


@pytest.mark.parametrize("module", [m for m in MODULES if within(m, ("apmt.diagnose",))])
def test_the_diagnosis_imports_neither_the_figures_nor_measurement(module: str) -> None:
    wrong = sorted(name for name in imports(MODULES[module])
                   if within(name, ("apmt.report", "apmt.oneoff", *MEASUREMENT)))
    assert not wrong, f"{module} imports {wrong}"


def test_only_the_layout_module_spells_the_results_files() -> None:
    """(A command's help may show a file name as its argument's placeholder.)"""
    names = re.compile(r'"(model\.json|measurements\.csv|predictions\.csv|comm\.csv'
                       r'|decision\.json)"')
    spelled = sorted(f"{module}: {line.strip()}" for module, path in MODULES.items()
                     for line in path.read_text().splitlines()
                     if names.search(line) and module != "apmt.layout"
                     and "metavar" not in line and "_add_table_output" not in line)
    assert not spelled, spelled
