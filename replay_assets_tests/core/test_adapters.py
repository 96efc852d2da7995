"""Adapters map other delivery shapes onto the native contract with pinned defaults (SPEC 2.2)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.adapters import (
    SEED000_EVENT_TIME,
    Adapter,
    adapt_lines,
    adapt_seed000,
    adapt_seed001,
    seed000_batch,
)
from replay_assets.core.events import (
    Entity,
    Event,
    Op,
    ValidationContext,
    canonical_json,
    parse_event,
    sha256_text,
)
from replay_assets.demo.scenarios import fixture

WIDE = ValidationContext(dt.date(1970, 1, 1), dt.date(2100, 1, 1))


# ---- seed 000 -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed000() -> dict[str, Any]:
    return fixture("seed000_demo_batches.json")


@pytest.fixture(scope="module")
def seed000_lines(seed000: dict[str, Any]) -> dict[str, list[str]]:
    return adapt_seed000(seed000["batches"], seed000["delivery_sequence"])


def records(seed000: dict[str, Any], batch_id: str) -> list[dict[str, Any]]:
    return next(b["records"] for b in seed000["batches"] if b["batch_id"] == batch_id)


def test_seed000_one_list_per_batch_in_delivery_order(
    seed000: dict[str, Any], seed000_lines: dict[str, list[str]]
) -> None:
    assert list(seed000_lines) == ["initial", "corrections", "late"]
    for batch_id, lines in seed000_lines.items():
        assert len(lines) == len(records(seed000, batch_id))
        assert all(line == canonical_json(json.loads(line)) for line in lines)


def test_seed000_event_id_is_the_hash_of_the_canonical_record(
    seed000: dict[str, Any], seed000_lines: dict[str, list[str]]
) -> None:
    for batch_id, lines in seed000_lines.items():
        for record, line in zip(records(seed000, batch_id), lines, strict=True):
            event = json.loads(line)
            expected = sha256_text(canonical_json(record))[:32]
            assert event["event_id"] == expected
            assert len(event["event_id"]) == 32
            assert event["version"] == record["source_version"]
            assert event["key"] == {"order_id": record["order_id"], "line_no": 1}


def test_seed000_source_seq_is_the_delivery_ordinal(seed000_lines: dict[str, list[str]]) -> None:
    seqs = {b: [json.loads(line)["source_seq"] for line in lines] for b, lines in seed000_lines.items()}
    assert seqs["initial"] == [1, 2, 3]
    assert seqs["corrections"] == [4, 5, 6]
    # 'late' re-sends the 'a' v1 record (first seen as ordinal 1), then a new 'b' v3 (ordinal 8)
    assert seqs["late"] == [1, 8]


def test_seed000_resent_record_is_the_same_source_change(
    seed000: dict[str, Any], seed000_lines: dict[str, list[str]]
) -> None:
    first_a = json.loads(seed000_lines["initial"][0])
    late_a = json.loads(seed000_lines["late"][0])
    assert records(seed000, "late")[0] == records(seed000, "initial")[0]
    assert late_a["event_id"] == first_a["event_id"]
    assert late_a["source_seq"] == first_a["source_seq"]
    assert seed000_lines["late"][0] == seed000_lines["initial"][0]
    e1, e2 = parse_event(seed000_lines["initial"][0], WIDE), parse_event(seed000_lines["late"][0], WIDE)
    assert isinstance(e1, Event)
    assert isinstance(e2, Event)
    assert e1.content_sha256 == e2.content_sha256


def test_seed000_batch_is_one_batch_of_the_document_and_keeps_a_bad_record_for_rejection(
    seed000: dict[str, Any], seed000_lines: dict[str, list[str]]
) -> None:
    assert seed000_batch(seed000, "late") == seed000_lines["late"]  # numbered over the whole order
    broken = json.loads(json.dumps(seed000))
    del broken["batches"][0]["records"][1]["store_id"]
    lines = seed000_batch(broken, "initial")
    assert lines[1] == canonical_json(broken["batches"][0]["records"][1])  # as delivered
    assert not isinstance(parse_event(lines[1], WIDE), Event)  # validation rejects it, with a reason
    assert lines[0] == seed000_lines["initial"][0]
    with pytest.raises(ValueError, match="not in its delivery_sequence"):
        seed000_batch(seed000, "absent")
    with pytest.raises(ValueError, match="not a seed-000 document"):
        seed000_batch([seed000], "initial")


def test_seed000_distinct_records_get_distinct_ids_and_seqs(seed000_lines: dict[str, list[str]]) -> None:
    unique = {line for lines in seed000_lines.values() for line in lines}
    events = [json.loads(line) for line in unique]
    assert len({e["event_id"] for e in events}) == len(events)
    assert len({e["source_seq"] for e in events}) == len(events)


def test_seed000_pinned_defaults(seed000: dict[str, Any], seed000_lines: dict[str, list[str]]) -> None:
    record = records(seed000, "initial")[0]
    event = json.loads(seed000_lines["initial"][0])
    assert event["schema_version"] == 1
    assert event["entity"] == "order_line"
    assert event["op"] == "upsert"
    assert event["event_time"] == SEED000_EVENT_TIME
    assert event["after"] == {
        "order_id": record["order_id"],
        "line_no": 1,
        "store_id": record["store_id"],
        "customer_id": "unknown",
        "product_id": "unknown",
        "business_date": record["business_date"],
        "quantity": 1,
        "amount_minor": record["amount_minor"],
        "cost_minor": 0,
        "status": record["status"],
    }


def test_seed000_delete_record(seed000_lines: dict[str, list[str]]) -> None:
    delete = json.loads(seed000_lines["corrections"][2])
    assert delete["op"] == "delete"
    assert delete["after"] is None
    assert delete["key"] == {"order_id": "c", "line_no": 1}
    assert delete["version"] == 2


def test_seed000_every_line_is_a_valid_event(seed000_lines: dict[str, list[str]]) -> None:
    for lines in seed000_lines.values():
        for line in lines:
            outcome = parse_event(line, WIDE)
            assert isinstance(outcome, Event), outcome
            assert outcome.entity is Entity.ORDER_LINE


def test_seed000_replayed_batch_in_delivery_sequence_does_not_shift_ordinals() -> None:
    rec = {
        "order_id": "x",
        "source_version": 1,
        "operation": "upsert",
        "status": "active",
        "store_id": "s",
        "business_date": "2026-01-01",
        "amount_minor": 5,
    }
    other = {**rec, "order_id": "y"}
    batches = [{"batch_id": "one", "records": [rec]}, {"batch_id": "two", "records": [other]}]
    out = adapt_seed000(batches, ["one", "one", "two"])
    assert [json.loads(line)["source_seq"] for line in out["one"]] == [1]
    # the replayed 'one' consumed ordinal 2; 'two' is the third record delivered
    assert [json.loads(line)["source_seq"] for line in out["two"]] == [3]


# ---- seed 001 -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed001() -> dict[str, dict[str, Any]]:
    return {e["event_id"]: e for e in fixture("seed001_events.json")["events"]}


def test_seed001_insert_and_update_become_upserts(seed001: dict[str, dict[str, Any]]) -> None:
    for event_id in ("e201", "e202", "e203", "e205", "e206"):
        assert adapt_seed001(seed001[event_id])["op"] == "upsert"


def test_seed001_sale_update_mapping(seed001: dict[str, dict[str, Any]]) -> None:
    out = adapt_seed001(seed001["e202"])
    assert out == {
        "event_id": "e202",
        "source_seq": 202,
        "schema_version": 1,
        "entity": "order_line",
        "op": "upsert",
        "key": {"order_id": "O1003", "line_no": 2},
        "event_time": "2026-09-19T15:00:00Z",
        "after": {
            "order_id": "O1003",
            "line_no": 2,
            "store_id": "main",
            "customer_id": "C001",
            "product_id": "P200",
            "business_date": "2026-09-19",
            "quantity": 2,
            "amount_minor": 55,
            "cost_minor": 30,
            "status": "active",
        },
    }


def test_seed001_envelope_fields_are_not_in_the_output(seed001: dict[str, dict[str, Any]]) -> None:
    for event in seed001.values():
        out = adapt_seed001(event)
        assert not {"before", "event_ts", "source_updated_at"} & set(out)
        if isinstance(out.get("after"), dict):
            assert not {"extended_amount", "extended_cost"} & set(out["after"])


def test_seed001_delete(seed001: dict[str, dict[str, Any]]) -> None:
    out = adapt_seed001(seed001["e204"])
    assert out["op"] == "delete"
    assert out["after"] is None
    assert out["key"] == {"order_id": "O1005", "line_no": 2}
    assert out["entity"] == "order_line"


def test_seed001_customer(seed001: dict[str, dict[str, Any]]) -> None:
    out = adapt_seed001(seed001["e203"])
    assert out["entity"] == "customer"
    assert out["key"] == {"customer_id": "C002"}
    assert out["after"] == {"customer_id": "C002", "name": "Ben Home", "segment": "Growth"}


def test_seed001_business_date_is_the_utc_date_of_event_ts(seed001: dict[str, dict[str, Any]]) -> None:
    for event in seed001.values():
        out = adapt_seed001(event)
        if out["entity"] == "order_line" and out["op"] == "upsert":
            assert out["after"]["business_date"] == event["event_ts"][:10]
            assert out["after"]["store_id"] == "main"
            assert out["after"]["status"] == "active"
    shifted = {**seed001["e201"], "event_ts": "2026-09-21T01:30:00+02:00"}
    assert adapt_seed001(shifted)["after"]["business_date"] == "2026-09-20"


def test_seed001_key_with_pipe_in_order_id() -> None:
    event = {
        "event_id": "e9",
        "source_seq": 9,
        "schema_version": 1,
        "entity": "sale",
        "op": "D",
        "key": "O|7|3",
        "event_ts": "2026-09-21T08:00:00Z",
    }
    assert adapt_seed001(event)["key"] == {"order_id": "O|7", "line_no": 3}


def test_seed001_every_event_is_valid_after_mapping(seed001: dict[str, dict[str, Any]]) -> None:
    lines = adapt_lines(Adapter.SEED001, [json.dumps(e) for e in seed001.values()])
    assert lines == [canonical_json(adapt_seed001(e)) for e in seed001.values()]
    outcomes = [parse_event(line, WIDE) for line in lines]
    assert all(isinstance(o, Event) for o in outcomes), outcomes
    by_id = {o.event_id: o for o in outcomes if isinstance(o, Event)}
    assert by_id["e204"].op is Op.DELETE
    assert by_id["e203"].entity is Entity.CUSTOMER
    assert by_id["e202"].version == 202


# ---- Debezium -------------------------------------------------------------------------------

ORDER_IMAGE = {
    "order_id": "O7",
    "line_no": 2,
    "store_id": "north",
    "customer_id": "C1",
    "product_id": "P1",
    "business_date": "2025-09-21",
    "quantity": 1,
    "amount_minor": 100,
    "cost_minor": 40,
    "status": "active",
}
TS_MS = 1758441600000  # 2025-09-21T08:00:00Z


# ---- adapt_lines ----------------------------------------------------------------------------

UNREADABLE = [
    "{not json",
    "",
    "[1, 2, 3]",
    '"text"',
    "17",
    '{"entity": "sale"}',
    '{"entity": "sale", "op": "I", "key": "no-pipe", "event_ts": "2026-01-01T00:00:00Z"}',
    '{"entity": "sale", "op": "I", "key": "O1|x", "event_ts": "2026-01-01T00:00:00Z"}',
]


@pytest.mark.parametrize("line", UNREADABLE)
def test_adapt_lines_passes_an_unreadable_line_through(line: str) -> None:
    assert adapt_lines(Adapter.SEED001, ["{bad", line, "{bad"]) == ["{bad", line, "{bad"]


def test_adapt_lines_native_is_identity() -> None:
    lines = ["{not json", '{"a": 1}', ""]
    assert adapt_lines(Adapter.NATIVE, iter(lines)) == lines


@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.text(max_size=80), max_size=5), st.sampled_from([Adapter.SEED001, Adapter.NATIVE]))
def test_adapt_lines_keeps_one_line_per_line(lines: list[str], adapter: Adapter) -> None:
    out = adapt_lines(adapter, lines)
    assert len(out) == len(lines)
    for before, after in zip(lines, out, strict=True):
        try:
            json.loads(before)
        except ValueError:
            assert after == before


def test_adapt_lines_keeps_a_deeply_nested_line() -> None:
    line = "[" * 100_000 + "]" * 100_000
    assert adapt_lines(Adapter.SEED001, [line]) == [line]
