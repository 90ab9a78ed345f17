"""Layering rules of DESIGN.md, checked on the source: Spark only in runtimes/spark."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "elastream"
SPARK_ONLY = PACKAGE / "runtimes" / "spark"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(
    "path", sorted(p for p in PACKAGE.rglob("*.py") if SPARK_ONLY not in p.parents),
    ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_spark_runtime_imports_pyspark(path: Path) -> None:
    spark = {m for m in imported_modules(path) if m.split(".")[0] in ("pyspark", "py4j")}
    spark |= {m for m in imported_modules(path) if m.startswith(("elastream.runtimes.spark",
                                                                  "elastream.api"))}
    if path == PACKAGE / "api.py":
        return  # the public API: the Spark runtime's entry points, imported when asked for
    if path.parent.name == "cli" or path == PACKAGE / "__init__.py":
        # The CLI may start the Spark runtime, but only lazily inside a command; the package
        # exports the Python API lazily (on first use).
        top_level = {m for m in _top_level_imports(path) if "spark" in m}
        assert not top_level, f"{path} imports {top_level} at module level"
        return
    assert not spark, f"{path} imports {sorted(spark)}"


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "algorithms").rglob("*.py")),
    ids=lambda p: str(p.relative_to(PACKAGE)))
def test_algorithms_are_pure(path: Path) -> None:
    """No engine, no runtime, no controller, no clock inside algorithms/."""
    forbidden = {m for m in imported_modules(path)
                 if m.startswith(("elastream.runtimes", "elastream.control", "elastream.cli"))
                 or m in ("time", "datetime")}
    assert not forbidden, f"{path} imports {sorted(forbidden)}"


def _top_level_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


BALANCE = PACKAGE / "algorithms" / "balance"


def test_only_a_planner_s_own_module_tests_its_name_or_options() -> None:
    """What a planner can do is declared (core/plan.Capability in the planner registry), so no
    code elsewhere compares a job's planner with a name or checks its options' type."""
    from elastream.control.planners import PLANNERS

    names = "|".join(PLANNERS)
    options = "|".join(entry.options_type.__name__ for entry in PLANNERS.values())
    rules = [re.compile(rf"""planner\s*(==|!=|in)\s*\(?["']({names})["']"""),
             re.compile(rf"""["']({names})["']\s*(==|!=)\s*\w*planner"""),
             re.compile(rf"isinstance\([^)]*\b({options})\b")]
    found = [f"{path.relative_to(PACKAGE)}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if BALANCE not in path.parents
             for line in path.read_text().splitlines() if any(r.search(line) for r in rules)]
    assert not found


LAYERS = {"core": (), "stores": ("core",), "algorithms": ("core",)}
"""What each low layer may import of elastream: core holds pure types and rules, stores sit
between it and the control loop, algorithms are pure."""


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_low_layer_imports_only_the_layers_below_it(layer: str) -> None:
    allowed = {"elastream", f"elastream.{layer}", *(f"elastream.{b}" for b in LAYERS[layer])}
    found = {f"{path.relative_to(PACKAGE)}: {m}"
             for path in sorted((PACKAGE / layer).rglob("*.py"))
             for m in imported_modules(path) if m.startswith("elastream")
             and ".".join(m.split(".")[:2]) not in allowed}
    assert not found
