"""The dependency direction of the house style, enforced: core < storage < usecases < defs/cli."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "replay_assets"
FORBIDDEN = {
    "core": {"dagster", "duckdb", "replay_assets.storage", "replay_assets.defs", "os", "time", "subprocess"},
    "storage": {
        "dagster",
        "replay_assets.usecases",
        "replay_assets.defs",
        "replay_assets.entrypoints",
        "replay_assets.demo",
    },
    "usecases": {
        "dagster",
        "duckdb",
        "replay_assets.defs",
        "replay_assets.entrypoints",
        "replay_assets.demo",
    },
}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_respect_the_direction(layer: str) -> None:
    offenders = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):  # the rooms of storage/ too
        for name in imported_modules(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|WITH|MERGE)\b")


def test_use_cases_hold_no_sql() -> None:
    """SQL lives in the storage layer, behind the warehouse port (the adapters' boundary: a
    second engine implements storage, not the use cases)."""
    offenders = []
    for path in sorted((PACKAGE / "usecases").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.match(node.value):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} SQL text")
            if isinstance(node, ast.ImportFrom) and node.module == "replay_assets.storage.db.warehouse":
                raw = {"one", "query_frame", "insert_frame"} & {alias.name for alias in node.names}
                offenders.extend(f"{path.relative_to(PACKAGE)} imports {name}" for name in sorted(raw))
    assert offenders == []


def test_use_cases_reach_the_warehouse_only_through_the_store() -> None:
    """A use case opens units of work on ``pipeline.store`` (``storage/ports.py``), never the
    DuckDB adapter's writer or reader beneath it, so a second engine runs every use case."""
    offenders = []
    for path in sorted((PACKAGE / "usecases").rglob("*.py")):
        if path.name == "context.py":  # the composition of the ports themselves
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"warehouse", "reader"}:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} uses .{node.attr}")
    assert offenders == []
