"""Hostile Debezium files through the command line (SPEC 10, "Hostile input", v4: Debezium
files and their positions): ``land`` refuses what the contract cannot number, lands every record
it can and rejects the rest with the mapping's reason, and a run then certifies only what the
source sent for the tables it maps."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from replay_assets.entrypoints.cli import main
from replay_assets.storage.home import files as safe_files
from replay_assets_tests.core.test_debezium_hostile import ROW, YEAR_10000_MS, at, message

NOW = "2026-01-10T12:00:00Z"
DAY = "2026-01-01"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_FAIL_POINT", "REPLAY_ASSETS_FAIL_ONCE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def land(home: Path, lines: list[str], name: str = "changes.jsonl", source: str = "shop") -> int:
    return land_file(home, written(home.parent / name, lines), source)


def written(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def land_file(home: Path, path: Path, source: str = "shop") -> int:
    command = ["land", str(path), "--source", source, "--load-date", DAY, "--adapter", "debezium"]
    return main([*command, "--home", str(home)])


def exported(home: Path, table: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["export", table, "--home", str(home), "--format", "jsonl"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def landed_files(home: Path) -> list[Path]:
    return [p for p in (home / "landing").rglob("*") if p.is_file()] if (home / "landing").exists() else []


@pytest.mark.parametrize(("lsn", "declared"), [(24023128, {"position_offset": 24023128}), (1, None)])
def test_a_snapshot_the_offset_leaves_no_room_for_is_refused_at_land(
    home: Path, capsys: pytest.CaptureFixture[str], lsn: int, declared: dict[str, int] | None
) -> None:
    """SPEC 10: a source position that cannot be mapped into the contract refuses the file at
    ``land`` (exit 2 naming the setting); it never turns into rejected rows of a certified date."""
    if declared is not None:
        tables = {"public.order_lines": {"entity": "order_line"}}
        (home / "replay-assets.json").write_text(
            json.dumps({"debezium": {"shop": declared | {"tables": tables}}})
        )
    reads = [at(lsn, mysql=False, op="r", order_id=f"O{n}") for n in range(5)]
    assert land(home, reads) == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and "debezium.shop.position_offset" in err and "changes.jsonl" in err
    assert landed_files(home) == []


def test_the_default_mapping_never_merges_another_schema_into_public(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: input never mixes. Without a declaration ``staging_test.order_lines`` is not
    ``public.order_lines``: its record lands as delivered and is rejected with the mapping's
    reason; public's order keeps its amount."""
    lines = [
        message(image=ROW | {"order_id": "o1", "amount_minor": 100}),
        message(image=ROW | {"order_id": "o1", "amount_minor": 999999}, schema="staging_test", lsn=901),
    ]
    assert land(home, lines) == 0
    assert "1 of 2 records could not be mapped" in capsys.readouterr().out
    assert main(["run", "--home", str(home)]) == 0
    assert [(r["order_id"], r["amount_minor"]) for r in exported(home, "current_orders", capsys)] == [
        ("o1", 100)
    ]
    [rejected] = exported(home, "rejected_events", capsys)
    assert rejected["line_number"] == 2 and rejected["reason_code"] == "UNMAPPED_RECORD"
    assert "'staging_test.order_lines' is not mapped" in rejected["detail"]
    [record] = [r for r in exported(home, "source_records", capsys) if r["reason"]]
    assert record["record_number"] == 2 and record["line_number"] == 2


def test_a_commit_time_beyond_year_9999_rejects_its_record_and_lands_the_rest(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: a bad value is a rejection with its reason, never a traceback that loses the
    file's valid records."""
    lines = [
        message(image=ROW | {"order_id": "o1"}),
        message(image=ROW | {"order_id": "o2"}, lsn=901, ts_ms=YEAR_10000_MS),
        message(image=ROW | {"order_id": "o3"}, lsn=902),
    ]
    assert land(home, lines) == 0
    assert main(["run", "--home", str(home)]) == 0
    assert [r["order_id"] for r in exported(home, "current_orders", capsys)] == ["o1", "o3"]
    [rejected] = exported(home, "rejected_events", capsys)
    assert rejected["reason_code"] == "UNMAPPED_RECORD" and "commit time" in rejected["detail"]


def test_files_of_tombstones_only_get_batch_ids_of_their_own(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: a batch id never hides another delivery. Two files that map to no event are
    still two deliveries: the default batch id comes from the file's own content."""
    assert land(home, ["null"], name="one.jsonl") == 0
    first = capsys.readouterr().out
    assert land(home, ["null", "null"], name="two.jsonl") == 0
    second = capsys.readouterr().out
    assert first.startswith("landed batch ") and second.startswith("landed batch ")
    assert first.split()[2] != second.split()[2]
    assert land(home, ["null"], name="one.jsonl") == 0  # the same file again: the same delivery
    assert capsys.readouterr().out.startswith(f"already landed (identical delivery) batch {first.split()[2]}")


def test_an_over_long_line_is_bounded_while_land_reads_it(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC 10: over-long lines are bounded before buffering, at ``land`` as at ``run``: a 32 MiB
    record costs about one read block, and it is a record rejected with its reason while the
    file's other records land."""
    assert (
        land(home, [message(image=ROW | {"order_id": "o0"}, lsn=800)], name="warm.jsonl", source="warm") == 0
    )
    monkeypatch.setattr(safe_files, "BLOCK_BYTES", 64 << 10)
    huge = message(image=ROW | {"order_id": "o1", "status": "x" * (32 << 20)})
    path = written(home.parent / "changes.jsonl", [huge, message(image=ROW | {"order_id": "o2"}, lsn=901)])
    del huge
    tracemalloc.start()
    try:
        assert land_file(home, path) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the line is 32 MiB
    assert "record 1: line exceeds 1048576 bytes" in capsys.readouterr().out
    assert main(["run", "--home", str(home)]) == 0
    assert [r["order_id"] for r in exported(home, "current_orders", capsys)] == ["o0", "o2"]
    [rejected] = exported(home, "rejected_events", capsys)
    assert rejected["reason_code"] == "UNMAPPED_RECORD" and "exceeds 1048576 bytes" in rejected["detail"]


def test_a_debezium_file_that_is_not_utf8_is_a_usage_error_naming_the_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: invalid UTF-8 is never repaired; ``land`` refuses such a file (exit 2) as it does
    for every adapter, now that it reads Debezium files line by line."""
    path = written(home.parent / "changes.jsonl", [message()])
    path.write_bytes(path.read_bytes() + b'{"op": "\xff"}\n')
    assert land_file(home, path) == 2
    assert "is not UTF-8 text (line 2)" in capsys.readouterr().err and landed_files(home) == []
