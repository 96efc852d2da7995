"""The Debezium adapter (SPEC 2.2, issue 15 item 2) against envelopes shaped like Debezium's
documented PostgreSQL and MySQL output (``replay_assets_tests/fixtures``), its declared column
mapping, its evidence, and a property test against the native path."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core import debezium
from replay_assets.core.config import SettingsError, settings_from
from replay_assets.core.events import Event, Rejection, ValidationContext, parse_event
from replay_assets_tests.core.strategies import Change, histories, truth
from replay_assets_tests.core.test_state_properties import run_days, simplified

FIXTURES = Path(__file__).parent.parent / "fixtures"
CTX = ValidationContext(dt.date(2016, 1, 1), dt.date(2030, 1, 1))
INVENTORY = {
    "inventory.orders": {
        "entity": "order_line",
        "columns": {"order_id": "order_number", "customer_id": "purchaser", "business_date": "order_date"},
        "defaults": {
            "line_no": 1,
            "store_id": "main",
            "amount_minor": 0,
            "cost_minor": 0,
            "status": "active",
        },
    },
    "inventory.customers": {
        "entity": "customer",
        "columns": {"customer_id": "id", "name": "first_name"},
        "defaults": {"segment": "retail"},
    },
}
MAPPING = debezium.parse_mappings({"pg": {"tables": INVENTORY}})["pg"]
SNAPSHOT_LSN = 24023128
BINLOG_3 = 3 * 2**32


def fixture(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


def parsed(lines: list[str]) -> list[Event]:
    events = [parse_event(line, CTX) for line in lines]
    assert all(isinstance(e, Event) for e in events), events
    return events  # type: ignore[return-value]


def records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(r) for r in lines]


def test_postgres_with_the_schema_wrapper_maps_every_op() -> None:
    native, found = found_records(fixture("debezium_postgres.jsonl"), MAPPING)
    events = parsed(native)
    assert len(found) == 10 and len(native) == 9  # the tombstone becomes no event
    snapshot = events[:4]  # four reads at one LSN: versions at it, seqs numbered just below it
    assert [e.version for e in snapshot] == [SNAPSHOT_LSN] * 4
    assert [e.source_seq for e in snapshot] == [
        SNAPSHOT_LSN - 3,
        SNAPSHOT_LSN - 2,
        SNAPSHOT_LSN - 1,
        SNAPSHOT_LSN,
    ]
    assert [e.op for e in snapshot] == ["upsert"] * 4
    created = events[4]
    assert (created.source_seq, created.version, created.key) == (24023296, 24023296, '["10002",1]')
    assert created.event_time == "2019-05-28T08:58:25.120Z"  # source.ts_ms: the commit, not the connector
    assert created.image is not None
    assert created.image["business_date"] == "2016-01-17"  # io.debezium.time.Date: days since 1970
    assert created.image["customer_id"] == "1002" and created.image["quantity"] == 2
    updated = events[6]
    assert updated.entity == "customer" and updated.image == {
        "customer_id": "1001",
        "name": "Anne Marie",
        "segment": "retail",
    }
    deleted = events[7]
    assert (deleted.op, deleted.key, deleted.image) == ("delete", '["10001",1]', None)  # key from before
    assert events[8].version == 24023600
    tombstone = found[8]
    assert tombstone["line"] is None and tombstone["reason"] is None and tombstone["evidence"] == {"op": None}
    created_record = found[4]
    assert created_record["line"] == 5 and created_record["envelope"] == fixture("debezium_postgres.jsonl")[4]
    evidence = created_record["evidence"]
    assert evidence["transaction"] == {"id": "556:24023296", "total_order": 1, "data_collection_order": 1}
    assert evidence["source"]["lsn"] == 24023296 and evidence["source"]["txId"] == 556
    assert [r["evidence"]["snapshot"] for r in found[:4]] == ["first", "true", "true", "last"]


def found_records(
    lines: list[str], mapping: debezium.SourceMapping
) -> tuple[list[str], list[dict[str, Any]]]:
    native, out = debezium.adapt_file(lines, mapping)
    return native, records(out)


def test_mysql_bare_envelopes_use_binlog_coordinates() -> None:
    native, found = found_records(fixture("debezium_mysql.jsonl"), MAPPING)
    events = parsed(native)
    assert [e.source_seq for e in events] == [
        BINLOG_3 + 154,
        BINLOG_3 + 484,
        BINLOG_3 + 600,
        BINLOG_3 + 601,
        BINLOG_3 + 805,
    ]
    assert [e.op for e in events] == ["upsert", "upsert", "upsert", "upsert", "delete"]
    assert events[0].event_time == "2016-06-09T16:56:51.815Z"  # source.ts_ms 0: the envelope's time
    assert events[1].event_time == "2016-06-10T17:50:29.100Z"
    assert [e.key for e in events[2:4]] == ['["10005",1]', '["10006",1]']  # one multi-row event
    gtid = "0e4d5dcd-a33b-11ea-b1dd-0242ac120003:7"
    assert [r["evidence"]["transaction"]["id"] for r in found[2:4]] == [gtid, gtid]
    assert found[2]["evidence"]["source"] | {} == found[2]["evidence"]["source"]
    assert (found[3]["evidence"]["source"]["pos"], found[3]["evidence"]["source"]["row"]) == (600, 1)
    assert found[5]["line"] is None  # the tombstone


def test_the_wrapper_changes_nothing() -> None:
    bare = fixture("debezium_mysql.jsonl")
    wrapped = [json.dumps({"schema": {"type": "struct"}, "payload": json.loads(line)}) for line in bare]
    assert debezium.adapt_file(wrapped, MAPPING)[0] == debezium.adapt_file(bare, MAPPING)[0]


def _message(op: str = "c", **source: Any) -> dict[str, Any]:
    row = {"order_number": 7, "order_date": 16816, "purchaser": 1, "quantity": 1, "product_id": 2}
    src = {"connector": "postgresql", "db": "postgres", "schema": "inventory", "table": "orders"}
    src |= {"lsn": 900, "ts_ms": 1559033904863} | source
    return {"op": op, "before": None, "after": row, "source": src, "ts_ms": 1}


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (_message("t"), "op 't' is not one of c, u, d, r"),
        (_message(table="invoices"), "table 'inventory.invoices' is not mapped"),
        ({**_message(), "after": None}, "op 'c' without its after image"),
        (
            _message("x" * 100_000),
            'op "' + "x" * 80 + '" is not one of',
        ),  # a reason is bounded, whatever the record holds
        ({"op": "c", "after": {}}, "not a Debezium change event"),
        ("[1, 2]", "not a Debezium change event"),
        ('{"op": "c", "op": "d"}', "not readable: an object has the key 'op' twice"),
        ("{not json", "not a JSON value"),
    ],
)
def test_a_record_that_cannot_be_mapped_is_landed_as_delivered_and_rejected(
    message: Any, reason: str
) -> None:
    line = message if isinstance(message, str) else json.dumps(message)
    native, found = found_records([line], MAPPING)
    rejection = parse_event(native[0], CTX)  # validation rejects it with the reason: nothing is dropped
    assert isinstance(rejection, Rejection) and reason in rejection.detail
    assert reason in found[0]["reason"] and found[0]["line"] == 1 and found[0]["envelope"] == line


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (_message(lsn=None), "source has no position"),
        (_message(file="mysql-bin", pos=4, lsn=None), "binlog file 'mysql-bin' has no number"),
        (_message(file="mysql-bin.000003", pos=2**32 - 1, row=1, lsn=None), "beyond 2**32 within one file"),
    ],
)
def test_a_mapped_change_without_a_position_the_contract_can_number_refuses_the_file(
    message: dict[str, Any], reason: str
) -> None:
    """SPEC 10 (v4): a source position that cannot be mapped into the contract refuses the file
    at ``land``; it never turns into rejected rows of a certified date."""
    with pytest.raises(debezium.PositionOutOfRange, match=re.escape(reason)):
        debezium.adapt_file([json.dumps(_message()), json.dumps(message)], MAPPING)


def test_the_position_offset_rebases_and_a_position_below_it_is_refused() -> None:
    based = dataclasses.replace(MAPPING, position_offset=800)
    native, _ = debezium.adapt_file([json.dumps(_message())], based)
    assert parsed(native)[0].source_seq == 100
    with pytest.raises(debezium.PositionOutOfRange, match="below the source's position_offset"):
        debezium.adapt_file([json.dumps(_message(lsn=700))], based)


def test_the_settings_file_declares_mappings_per_source() -> None:
    declared = settings_from({}, "home", json.dumps({"debezium": {"pg": {"tables": INVENTORY}}})).debezium
    assert declared["pg"] == MAPPING
    assert debezium.parse_mappings({"pg": MAPPING.declaration()})["pg"] == MAPPING


CUSTOMER = {"entity": "customer"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"pg": {}}, "debezium.pg is not {tables, position_offset}"),
        ({"pg": {"tables": {}}}, "debezium.pg.tables is not an object"),
        ({"pg": {"tables": {"s.t": {"entity": "invoice"}}}}, "debezium.pg.tables.s.t.entity is not one of"),
        (
            {"pg": {"tables": {"s.t": {"entity": "customer", "columns": {"amount_minor": "x"}}}}},
            "not a field of customer",
        ),
        (
            {"pg": {"tables": {"s.t": {"entity": "customer", "columns": {"name": "a b"}}}}},
            "is not a column name",
        ),
        (
            {"pg": {"tables": {"s.t": {"entity": "customer"}}, "position_offset": -1}},
            "position_offset is not a whole",
        ),
    ],
)
def test_a_malformed_mapping_is_a_settings_error(spec: Any, message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("{", r"\{").replace("}", r"\}")):
        settings_from({}, "home", json.dumps({"debezium": spec}))


@settings(max_examples=80, deadline=None, database=None)
@given(
    st.lists(st.one_of(st.text(max_size=80), st.sampled_from(["null", "[]", '{"source": 3}'])), max_size=6)
)
def test_any_file_gives_one_record_per_message_and_never_raises(lines: list[str]) -> None:
    native, found = found_records(lines, MAPPING)
    assert [r["record"] for r in found] == [n for n, line in enumerate(lines, 1) if line.strip()]
    assert len(native) == sum(1 for r in found if r["line"] is not None)
    assert all(r["reason"] for r in found if r["line"] is not None)  # nothing here is an event


@pytest.mark.parametrize("ts", ["1e30", "Infinity", "-5", '"soon"'])
def test_an_impossible_commit_time_is_a_reason_not_a_crash(ts: str) -> None:
    message = json.loads(json.dumps(_message()))
    line = (
        json.dumps(message)
        .replace('"ts_ms": 1559033904863', f'"ts_ms": {ts}')
        .replace('"ts_ms": 1}', f'"ts_ms": {ts}}}')
    )
    native, found = found_records([line], MAPPING)
    assert len(native) == 1 and "no commit time" in found[0]["reason"]


# --------------------------------------------------------------------------- property test

RENAMED = debezium.parse_mappings(
    {
        "erp": {
            "tables": {
                "public.order_lines": {
                    "entity": "order_line",
                    "columns": {"order_id": "order_no", "amount_minor": "amount_cents"},
                }
            }
        }
    }
)["erp"]


def _row(change: Change) -> dict[str, Any]:
    image = change.image or {"order_id": change.key[0], "line_no": change.key[1]}
    row = {
        ("order_no" if k == "order_id" else "amount_cents" if k == "amount_minor" else k): v
        for k, v in image.items()
    }
    return row | {"note": "a column outside the contract"}


def _rendered(log: list[tuple[str, Change, int]], mysql: bool, wrap: bool) -> list[str]:
    lines = []
    for op, change, at in log:
        source: dict[str, Any] = {"connector": "mysql" if mysql else "postgresql", "schema": "public"}
        source |= {
            "table": "order_lines",
            "ts_ms": 1_700_000_000_000 + at,
            "snapshot": str(op == "r").lower(),
        }
        if mysql:
            source |= {"file": f"binlog.{at // 1000:06d}", "pos": at % 1000, "row": 0}
        else:
            source |= {"lsn": at}
        row = _row(change)
        message = {"op": op, "before": row if op == "d" else None, "after": None if op == "d" else row}
        message |= {"source": source, "ts_ms": 1}
        lines.append(json.dumps({"schema": None, "payload": message} if wrap else message))
    return lines


@settings(max_examples=80, deadline=None, database=None)
@given(st.data())
def test_any_history_through_debezium_folds_to_the_native_state(data: st.DataObject) -> None:
    """A native history written as Debezium would (positions in version order, a snapshot for
    some keys' first change, c/u/d, either connector, wrapped or not) lands, shuffled and
    duplicated across load dates, on the same images as the native contract gives."""
    history = data.draw(histories())
    mysql, wrap = data.draw(st.booleans()), data.draw(st.booleans())
    ordered = sorted(history, key=lambda c: (c.version, c.line))
    snapshot_keys = data.draw(st.sets(st.sampled_from(sorted({c.key for c in history}))))
    first = {c.key: c for c in reversed(ordered)}
    log: list[tuple[str, Change, int]] = []
    seen: set[tuple[str, int]] = set()
    for n, change in enumerate(ordered):
        snapshot = change.key in snapshot_keys and first[change.key] is change and change.image is not None
        op = "r" if snapshot else "d" if change.image is None else "u" if change.key in seen else "c"
        log.append((op, change, 5_000 if snapshot else 10_000 + 7 * n))  # every read at one position
        seen.add(change.key)
    native, found = debezium.adapt_file(_rendered(log, mysql, wrap), RENAMED)
    assert all(r["reason"] is None for r in records(found))
    days = [list(day) for day in data.draw(st.lists(st.permutations(native), min_size=1, max_size=3))]
    state, outcomes = run_days(days)
    assert all(sum(c.rejected for c in out.counts.values()) == 0 for out in outcomes)
    assert {k: image for k, (_, image) in simplified(state).items()} == {
        k: image for k, (_, image) in truth(history).items()
    }
