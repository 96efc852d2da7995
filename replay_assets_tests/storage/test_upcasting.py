"""Schema evolution end to end (issue 15 item 3): seed 001's schema_version 2 batch blocks its
load date without a declared upcaster, applies with one, and a batch blocked before the
declaration is landed again by ``resolve --action reland`` — with the version, the upcaster and
the operator's decision kept as evidence, and the same state either way."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ErrorCode, ReplayError, Violation
from replay_assets.core.status import DateStatus
from replay_assets.core.upcast import parse_upcasters
from replay_assets.demo.scenarios import seed001
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.resolve import reland
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage.test_bad_input import partition_status, rows, statuses

BREAKING_DATE = "2026-09-23"
BREAKING_BATCH = "B20260923-CDC-D"
# seed 001's v2 producer renamed extended_amount to extended_amount_cents and stopped sending
# the line's other columns: the declaration maps the rename and pins defaults for the rest
V2 = {
    "rename": {"after.extended_amount_cents": "after.amount_minor"},
    "add": {
        "after.customer_id": "unknown",
        "after.product_id": "unknown",
        "after.quantity": 1,
        "after.cost_minor": 0,
        "after.status": "active",
    },
}
UPCASTERS = parse_upcasters({seed001.SOURCE: {"2": V2}})
LINE_SQL = """SELECT customer_id, product_id, quantity, amount_minor, cost_minor, status, version
              FROM current_orders WHERE order_id = 'O1001' AND line_no = 1"""


def seed001_home(home: Path, **settings: Any) -> Pipeline:
    p = Pipeline(settings_for(home, seed001.NOW, **settings))
    seed001.deliver_baseline(p.settings.landing)
    seed001.deliver_cdc(p.settings.landing, "B20260921-CDC-A", seed001.CDC_DATE, "2026-09-21T08:12:00Z")
    seed001.deliver_cdc(p.settings.landing, "B20260922-CDC-C", "2026-09-22", "2026-09-22T08:12:00Z")
    seed001.deliver_breaking(p.settings.landing, BREAKING_DATE)
    drive_to_stop(p)
    return p


def drive_to_stop(p: Pipeline) -> None:
    """Drive until done or until a load date blocks (the block is what some tests look at)."""
    try:
        drive(p)
    except ReplayError as stop:
        assert stop.code is ErrorCode.BATCH_BLOCKED, stop


def evidence(p: Pipeline) -> list[tuple[Any, ...]]:
    return rows(
        p,
        "SELECT batch_id, load_date, source_file, schema_version, upcaster_sha256, events FROM upcast_events",
    )


def test_without_an_upcaster_the_v2_batch_blocks_its_date(tmp_path: Path) -> None:
    p = seed001_home(tmp_path / "home")
    status, reason = statuses(p)[BREAKING_DATE]
    assert status is DateStatus.BLOCKED and "unsupported schema_version at source_seq=207" in reason
    assert partition_status(p, BREAKING_DATE)[0] == "BLOCKED"
    assert rows(p, "SELECT max(load_date) FROM load_dates") == [("2026-09-22",)]
    assert rows(p, "SELECT rule FROM batch_violations WHERE batch_id = ?", [BREAKING_BATCH]) == [
        (Violation.UNSUPPORTED_SCHEMA_VERSION.value,)
    ]
    assert evidence(p) == []


def test_with_an_upcaster_the_v2_batch_applies_and_records_its_version(tmp_path: Path) -> None:
    p = seed001_home(tmp_path / "home", upcasters=UPCASTERS)
    assert statuses(p)[BREAKING_DATE][0] is DateStatus.APPLIED
    assert partition_status(p, BREAKING_DATE)[0] == "CERTIFIED"
    assert rows(p, LINE_SQL) == [("unknown", "unknown", 1, 10000, 0, "active", 207)]
    upcaster = UPCASTERS[seed001.SOURCE][2]
    assert evidence(p) == [(BREAKING_BATCH, BREAKING_DATE, f"{BREAKING_BATCH}.jsonl", 2, upcaster.sha256, 1)]
    assert rows(p, "SELECT count(*) FROM batch_violations") == [(0,)]
    # the raw receipt is the delivered v2 line, untouched
    (payload,) = rows(p, "SELECT payload FROM raw_receipts WHERE batch_id = ?", [BREAKING_BATCH])[0]
    assert '"schema_version":2' in payload and "extended_amount_cents" in payload


def test_a_blocked_batch_is_relanded_once_its_upcaster_is_declared(tmp_path: Path) -> None:
    blocked = seed001_home(tmp_path / "home")
    with pytest.raises(ReplayError) as refused:  # still undeclared: landing again changes nothing
        reland(blocked, "B20260921-CDC-A", "not blocked", "ops")
    assert refused.value.code is ErrorCode.USAGE
    declared = Pipeline(dataclasses.replace(blocked.settings, upcasters=UPCASTERS))
    assert reland(declared, BREAKING_BATCH, "v2 upcaster declared", "ops") == BREAKING_DATE
    assert statuses(declared)[BREAKING_DATE][0] is DateStatus.READY
    drive(declared)
    assert statuses(declared)[BREAKING_DATE][0] is DateStatus.APPLIED
    assert rows(declared, LINE_SQL) == [("unknown", "unknown", 1, 10000, 0, "active", 207)]
    assert rows(declared, "SELECT batch_id, load_date, violations, note, operator FROM batch_relandings") == [
        (BREAKING_BATCH, BREAKING_DATE, 1, "v2 upcaster declared", "ops")
    ]
    attempts = rows(
        declared,
        "SELECT status FROM load_date_attempts WHERE load_date = ? ORDER BY attempted_at, status",
        [BREAKING_DATE],
    )
    assert [a[0] for a in attempts] == ["BLOCKED", "READY"]  # the block stays on record
    # the same state as a home that declared the upcaster from the start
    fresh = seed001_home(tmp_path / "fresh", upcasters=UPCASTERS)
    digest = "SELECT content_sha256 FROM snapshots WHERE load_date = ?"
    assert rows(declared, digest, [BREAKING_DATE]) == rows(fresh, digest, [BREAKING_DATE])


def test_relanding_without_the_declaration_blocks_again(tmp_path: Path) -> None:
    p = seed001_home(tmp_path / "home")
    reland(p, BREAKING_BATCH, "tried before declaring", "ops")
    drive_to_stop(p)
    assert statuses(p)[BREAKING_DATE][0] is DateStatus.BLOCKED
    assert rows(p, "SELECT count(*) FROM batch_relandings") == [(1,)]
    with pytest.raises(ReplayError, match="no landed batch"):
        reland(p, "B-NONE", "typo", "ops")
