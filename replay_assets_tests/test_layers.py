"""The dependency direction of the house style, enforced: core < storage < usecases < defs/cli."""

import ast
import importlib
import inspect
import pkgutil
import re
import sys
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


def imported_modules(path: Path, *, names: bool = False) -> set[str]:
    """The modules ``path`` imports; with ``names``, ``from m import y`` also as ``m.y`` (so a
    module imported by name counts)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if names:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


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


# The rooms of storage/, lowest first: each imports only rooms below it (runtime and
# TYPE_CHECKING imports alike). "storage" is the modules directly in storage/ (the ports).
STORAGE_ROOMS = (
    "rules",  # the engine-neutral columns and statement texts both adapters render
    "home",  # the home's files, clock, paths and failpoints: engine-neutral
    "db",  # DuckDB's connections, schema and the landing's segments
    "landing",
    "evidence",
    "apply",
    "publish",
    "retention",
    "storage",  # the ports: records, units, the store
    "journal",  # the executor and recovery over the ports
    "capabilities",  # each capability's operations written once, which both adapters inherit
    "duckdb_adapter",
    "spark",
)
# What each shell may import of the package (besides itself).
SHELLS = {
    "defs": {"core", "storage", "usecases"},
    "demo": {"core", "storage", "usecases", "entrypoints"},
    "entrypoints": {"core", "storage", "usecases", "defs", "definitions", "demo"},
}
# The demo drives the product through the entrypoints' session; only the command front (the
# ``demo`` and ``ui`` commands) reaches back into the demo, so the demo never imports it.
COMMAND_FRONT = ("replay_assets.entrypoints.cli", "replay_assets.entrypoints.ui")


def _package_imports(path: Path) -> set[str]:
    return {n for n in imported_modules(path, names=True) if n.startswith("replay_assets.")}


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["replay_assets", "storage"] or len(parts) < 3:
        return None
    return parts[2] if (PACKAGE / "storage" / parts[2]).is_dir() else "storage"


def test_every_storage_room_is_in_the_layer_order() -> None:
    rooms = {p.name for p in (PACKAGE / "storage").iterdir() if (p / "__init__.py").exists()}
    assert rooms | {"storage"} == set(STORAGE_ROOMS)


def test_storage_rooms_import_only_rooms_below_them() -> None:
    offenders = []
    for path in sorted((PACKAGE / "storage").rglob("*.py")):
        inner = path.relative_to(PACKAGE / "storage").parts
        own = inner[0] if len(inner) > 1 else "storage"
        for name in sorted(_package_imports(path)):
            room = _room(name)
            if room is not None and room != own and STORAGE_ROOMS.index(room) > STORAGE_ROOMS.index(own):
                offenders.append(f"{path.relative_to(PACKAGE)} ({own}) imports {name} ({room})")
    assert offenders == []


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_shells_import_only_what_they_may(shell: str) -> None:
    offenders = []
    for path in sorted((PACKAGE / shell).rglob("*.py")):
        for name in sorted(_package_imports(path)):
            top = name.split(".")[1]
            reaches_front = shell == "demo" and name.startswith(COMMAND_FRONT)
            if (top != shell and top not in SHELLS[shell]) or reaches_front:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


PORT_MODULES = (
    "replay_assets.storage.unit",
    "replay_assets.storage.ports",
    "replay_assets.storage.records",
    "replay_assets.storage.apply.steps",
    "replay_assets.storage.publish.steps",
)
ADAPTER_PACKAGES = (
    "replay_assets.storage.db",
    "replay_assets.storage.duckdb_adapter",
    "replay_assets.storage.spark",
)
PORT_BUDGET = 12
ADAPTER_BUDGET = 20


def _methods(cls: type) -> set[str]:
    """The methods and properties of ``cls``, inherited ones included (the project's own classes;
    dunder methods and the typing machinery aside)."""
    names = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("replay_assets."):
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") and name.endswith("__"):
                continue
            if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
                names.add(name)
    return names


def _classes(module_name: str) -> list[type]:
    module = importlib.import_module(module_name)
    return [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__]


def test_each_port_has_at_most_twelve_methods() -> None:
    sizes = {
        f"{c.__module__}.{c.__name__}": len(_methods(c))
        for module in PORT_MODULES
        for c in _classes(module)
        if getattr(c, "_is_protocol", False)
    }
    assert "replay_assets.storage.unit.WarehouseWriter" in sizes  # the ports are found
    assert {name: n for name, n in sizes.items() if n > PORT_BUDGET} == {}


def test_each_adapter_class_has_at_most_twenty_methods_with_what_it_inherits() -> None:
    over = {}
    for package in ADAPTER_PACKAGES:
        path = importlib.import_module(package).__path__
        for info in pkgutil.iter_modules(path):
            for c in _classes(f"{package}.{info.name}"):
                name = f"{c.__module__.removeprefix('replay_assets.storage.')}.{c.__name__}"
                if len(_methods(c)) > ADAPTER_BUDGET:
                    over[name] = len(_methods(c))
    assert over == {}


def test_no_port_module_imports_an_engine() -> None:
    offenders = []
    for module in PORT_MODULES:
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        engines = {n for n in imported_modules(path) if n.split(".")[0] in {"duckdb", "pyspark"}}
        offenders.extend(f"{module} imports {name}" for name in sorted(engines))
    assert offenders == []


def _storage_modules(path: Path) -> set[str]:
    """The storage modules ``path`` imports (``from pkg import module`` as that module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("replay_assets.storage"):
            for alias in node.names:
                inner = PACKAGE.parent / (f"{node.module}.{alias.name}".replace(".", "/") + ".py")
                found.add(f"{node.module}.{alias.name}" if inner.exists() else node.module)
    return found


def test_rules_import_only_the_core_and_sqlglot() -> None:
    """The shared rules are engine-neutral: any adapter may import them."""
    offenders = []
    for path in sorted((PACKAGE / "storage" / "rules").rglob("*.py")):
        for name in sorted(imported_modules(path)):
            top = name.split(".")[0]
            project = name.startswith(("replay_assets.core", "replay_assets.storage.rules"))
            # polars: the frame a statement's rows may come back as (both adapters' dependency)
            known = sys.stdlib_module_names | {"sqlglot", "polars"}
            if not project and top != "__future__" and top not in known:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


# A module is DuckDB's if it imports duckdb or a module of these rooms; the Spark adapter may import
# a storage module only if that module reaches none of them, however many imports away.
DUCKDB_ROOMS = ("replay_assets.storage.db", "replay_assets.storage.duckdb_adapter")


def _module_file(module: str) -> Path | None:
    base = PACKAGE.parent / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def _reaches_duckdb(module: str, seen: dict[str, bool] | None = None) -> bool:
    """Whether importing ``module`` runs DuckDB's code: ``module`` is in a DuckDB room, or it, a
    package above it or a module it imports (runtime and TYPE_CHECKING alike) reaches one."""
    seen = {} if seen is None else seen
    if module in seen:
        return seen[module]
    seen[module] = False  # an import cycle adds nothing
    path = _module_file(module)
    if module == "duckdb" or module.startswith(tuple(f"{room}." for room in DUCKDB_ROOMS)):
        seen[module] = True
    elif path is not None:
        parents = [".".join(module.split(".")[:n]) for n in range(2, module.count(".") + 1)]
        imported = {n for n in imported_modules(path, names=True) if _module_file(n) or n == "duckdb"}
        seen[module] = any(_reaches_duckdb(n, seen) for n in sorted({*parents, *imported}))
    return seen[module]


def test_the_duckdb_rule_sees_through_neighbours() -> None:
    assert _reaches_duckdb("replay_assets.storage.db.warehouse")
    assert _reaches_duckdb("replay_assets.storage.landing.ingest")  # through db.segments
    assert not _reaches_duckdb("replay_assets.storage.rules.render")
    assert not _reaches_duckdb("replay_assets.storage.home.files")


def test_the_spark_adapter_imports_no_duckdb_module() -> None:
    """The Spark adapter is written from the shared rules: it imports neither DuckDB nor a storage
    module that reaches DuckDB, however indirectly."""
    found = {}
    for path in sorted((PACKAGE / "storage" / "spark").glob("*.py")):
        duckdb = {n for n in imported_modules(path) if n.split(".")[0] == "duckdb"}
        other = {
            n
            for n in _storage_modules(path)
            if not n.startswith("replay_assets.storage.spark") and _reaches_duckdb(n)
        }
        if duckdb | other:
            found[path.name] = duckdb | other
    assert found == {}
