"""A reader's unit of the warehouse has no write method: mypy refuses a write named through one,
and the DuckDB adapter's reader has none to call. A writer's unit has every read too."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api as mypy_api

from replay_assets.storage import unit as ports
from replay_assets.storage.db.warehouse import Warehouse, WarehouseReader
from replay_assets.storage.duckdb_adapter.unit import DuckDBStore
from replay_assets.storage.ports import Store

CAPABILITIES = {
    "journal": (ports.JournalReader, ports.JournalWriter),
    "landing": (ports.LandingReader, ports.LandingWriter),
    "apply": (ports.ApplyReader, ports.ApplyWriter),
    "publish": (ports.PublishReader, ports.PublishWriter),
    "evidence": (ports.EvidenceReader, ports.EvidenceWriter),
    "retention": (ports.RetentionReader, ports.RetentionWriter),
    "reports": (ports.Reports, ports.Reports),
}


def _operations(port: type) -> set[str]:
    return {
        n for k in port.__mro__ if k.__module__ == ports.__name__ for n in vars(k) if not n.startswith("_")
    }


def _writes() -> list[tuple[str, str]]:
    """Every (capability, operation) a writer's unit has and a reader's has not."""
    return sorted(
        (capability, name)
        for capability, (reader, writer) in CAPABILITIES.items()
        for name in _operations(writer) - _operations(reader)
    )


def test_the_writer_ports_add_writes_to_every_capability_that_writes() -> None:
    assert {capability for capability, _ in _writes()} == set(CAPABILITIES) - {"reports"}


def test_a_duckdb_readers_unit_has_no_write_and_a_writers_unit_has_every_read(tmp_path: Path) -> None:
    check_reader_and_writer_units(DuckDBStore(Warehouse(tmp_path, 5.0), WarehouseReader(tmp_path, 5.0)))


def check_reader_and_writer_units(store: Store) -> None:
    """A writer's unit of ``store`` has every operation of every capability; a reader's has no
    write to call (any engine's adapter)."""
    with store.transaction() as writer:
        writer.evidence.save_sensor_cursor("s", "c")  # the warehouse exists for the reader
        for capability, (reader_port, writer_port) in CAPABILITIES.items():
            held = getattr(writer, capability)
            assert all(hasattr(held, name) for name in _operations(writer_port) | _operations(reader_port))
    with store.read() as reader:
        assert reader.evidence.sensor_cursor("s") == "c"
        callable_writes = [f"{c}.{n}" for c, n in _writes() if hasattr(getattr(reader, c), n)]
        assert callable_writes == []


@pytest.mark.slow  # a mypy run over the package
def test_mypy_refuses_every_write_named_through_a_readers_unit(tmp_path: Path) -> None:
    lines = [
        "from replay_assets.storage.ports import Store",
        "def use(store: Store) -> None:",
        "    with store.transaction() as writer:",
        *(f"        writer.{c}.{n}" for c, n in _writes()),
        "    with store.read() as reader:",
        *(f"        reader.{c}.{n}" for c, n in _writes()),
    ]
    snippet = tmp_path / "snippet.py"
    snippet.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, _, _ = mypy_api.run(["--strict", "--ignore-missing-imports", "--no-error-summary", str(snippet)])
    refused = sorted(int(line.split(":")[1]) for line in out.splitlines() if "has no attribute" in line)
    first_read = lines.index("    with store.read() as reader:") + 2
    assert refused == list(range(first_read, len(lines) + 1))
