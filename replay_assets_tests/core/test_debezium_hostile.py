"""Hostile Debezium input (SPEC 10, "Hostile input", v4: the rules hold for Debezium files and
their positions): positions the contract cannot hold refuse the file, tables are mapped by their
full name only, impossible commit times and over-long lines are reasons, and an unmapped record
is rejected with the mapping's own reason, never certified."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core import debezium
from replay_assets.core.config import SettingsError, settings_from
from replay_assets.core.errors import RejectReason
from replay_assets.core.events import MAX_INT, Event, Rejection, ValidationContext, parse_event
from replay_assets_tests.core.test_adapters import ORDER_IMAGE, TS_MS

CTX = ValidationContext(dt.date(2016, 1, 1), dt.date(2030, 1, 1))
ROW = ORDER_IMAGE
YEAR_10000_MS = 253402300800000  # 10000-01-01T00:00:00Z


def message(op: str = "c", image: dict[str, Any] | None = None, **source: Any) -> str:
    image = image or ROW
    src: dict[str, Any] = {
        "connector": "postgresql",
        "db": "shop",
        "schema": "public",
        "table": "order_lines",
    }
    src |= {"lsn": 900, "ts_ms": TS_MS} | source
    body = {"op": op, "before": image if op == "d" else None, "after": None if op == "d" else image}
    return json.dumps(body | {"source": src, "ts_ms": TS_MS})


def adapted(lines: list[str], mapping: debezium.SourceMapping) -> tuple[list[str], list[dict[str, Any]]]:
    native, records = debezium.adapt_file(lines, mapping)
    return native, [json.loads(r) for r in records]


def outcomes(native: list[str]) -> list[Event | Rejection]:
    out = [parse_event(line, CTX) for line in native]
    assert all(isinstance(o, Event | Rejection) for o in out)
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------- positions (defect 3)


def with_offset(offset: int) -> debezium.SourceMapping:
    return dataclasses.replace(debezium.DEFAULT_MAPPING, position_offset=offset)


def at(position: int, mysql: bool, op: str = "c", order_id: str = "O7") -> str:
    """A change at ``position``: PostgreSQL's LSN, or MySQL's binlog coordinates for it."""
    row = ROW | {"order_id": order_id}
    if not mysql:
        return message(op, row, lsn=position)
    coordinates = {"file": f"mysql-bin.{position >> 32:06d}", "pos": position & (2**32 - 1), "row": 0}
    return message(op, row, lsn=None, connector="mysql", schema=None, db="public", **coordinates)


@pytest.mark.parametrize(("lsn", "offset"), [(24023128, 24023128), (1, 0), (24023130, 24023128)])
def test_a_snapshot_that_cannot_be_numbered_refuses_the_file(lsn: int, offset: int) -> None:
    """SPEC 10: a source position that cannot be mapped into the contract refuses the file at
    ``land``; it never turns into rejected rows. Five reads at the snapshot's position need five
    numbers just below it, which the declared offset leaves no room for."""
    reads = [at(lsn, mysql=False, op="r", order_id=f"O{n}") for n in range(5)]
    with pytest.raises(debezium.PositionOutOfRange, match=r"record 1: .*snapshot reads .*position_offset"):
        debezium.adapt_file(reads, with_offset(offset))


@pytest.mark.parametrize(("lsn", "offset"), [(700, 800), (MAX_INT + 801, 800), (2**64 - 1, 0)])
def test_a_change_outside_the_contract_after_the_offset_refuses_the_file(lsn: int, offset: int) -> None:
    """SPEC 10: a position below the offset or beyond the contract's 1e12 refuses the file; it
    is never one rejected row among certified ones."""
    lines = [at(900, mysql=False), at(lsn, mysql=False, order_id="O8")]
    with pytest.raises(debezium.PositionOutOfRange, match=r"record 2: .*position_offset"):
        debezium.adapt_file(lines, with_offset(offset))


OFFSETS = st.one_of(st.just(0), st.integers(0, 2**62), st.integers(0, 10**6))
DELTAS = st.one_of(st.integers(-8, 8), st.integers(MAX_INT - 8, MAX_INT + 8), st.integers(-(2**41), 2**41))


@settings(max_examples=200, deadline=None, database=None)
@given(
    offset=OFFSETS,
    delta=DELTAS,
    reads=st.integers(0, 5),
    gaps=st.lists(st.integers(1, 2**33), max_size=4),
    mysql=st.booleans(),
)
def test_positions_and_offsets_land_whole_in_the_sources_order_or_refuse(
    offset: int, delta: int, reads: int, gaps: list[int], mysql: bool
) -> None:
    """SPEC 10 (positions): whatever the positions and the declared offset, a file of a snapshot
    and the changes after it is either mapped whole, every record an event in the source's
    order (reads numbered in delivery order just below their position, which is their version;
    each change at its position), or refused. Never a rejected record."""
    snapshot = max(0, offset + delta)
    changes = [snapshot + sum(gaps[: n + 1]) for n in range(len(gaps))]
    lines = [at(snapshot, mysql, op="r", order_id=f"R{n}") for n in range(reads)]
    lines += [at(p, mysql, order_id=f"C{n}") for n, p in enumerate(changes)]
    based = [p - offset for p in changes]
    numbers = [snapshot - offset - reads + 1, snapshot - offset] if reads else []
    if not all(0 <= n <= MAX_INT for n in numbers + based):
        with pytest.raises(debezium.PositionOutOfRange, match="position_offset"):
            debezium.adapt_file(lines, with_offset(offset))
        return
    native, found = adapted(lines, with_offset(offset))
    assert [r["reason"] for r in found] == [None] * len(lines)
    events = outcomes(native)
    assert all(isinstance(e, Event) for e in events), events
    seqs = [e.source_seq for e in events]  # type: ignore[union-attr]
    versions = [e.version for e in events]  # type: ignore[union-attr]
    expected = list(range(snapshot - offset - reads + 1, snapshot - offset + 1)) + based
    assert seqs == expected and seqs == sorted(set(seqs))
    assert versions == [snapshot - offset] * reads + based


# --------------------------------------------------------------------------- tables (defect 4)


def test_the_default_mapping_maps_only_the_public_schema() -> None:
    """SPEC 10: input is never mixed. Without a declaration only ``public``'s tables map; the
    same table in another schema (or a MySQL database) is landed as delivered and rejected."""
    lines = [
        message(image=ROW | {"order_id": "o1", "amount_minor": 100}),
        message(image=ROW | {"order_id": "o1", "amount_minor": 999999}, schema="staging_test", lsn=901),
        message(image=ROW | {"order_id": "o2"}, schema=None, db="inventory", lsn=902),
    ]
    native, found = adapted(lines, debezium.DEFAULT_MAPPING)
    first, staged, mysql = outcomes(native)
    assert isinstance(first, Event) and first.image is not None and first.image["amount_minor"] == 100
    assert isinstance(staged, Rejection) and "'staging_test.order_lines' is not mapped" in staged.detail
    assert isinstance(mysql, Rejection) and "'inventory.order_lines' is not mapped" in mysql.detail
    assert [r["reason"] is None for r in found] == [True, False, False]


def test_a_declared_table_is_mapped_by_its_full_name_only() -> None:
    """A declaration names ``schema.table`` (``db.table`` for MySQL, which has no schemas): a
    PostgreSQL table whose database happens to carry the declared prefix is another table."""
    mapping = debezium.parse_mappings({"pg": {"tables": {"inventory.orders": {"entity": "order_line"}}}})[
        "pg"
    ]
    native, found = adapted([message(db="inventory", schema="staging", table="orders")], mapping)
    [outcome] = outcomes(native)
    assert isinstance(outcome, Rejection) and "'staging.orders' is not mapped" in found[0]["reason"]


@pytest.mark.parametrize("name", ["orders", ".orders", "inventory.", "a.b.c"])
def test_a_declared_table_that_is_not_a_full_name_is_a_settings_error(name: str) -> None:
    """SPEC 10: every settings value is checked when read; a bare table name would map the
    table of every schema at once."""
    spec = {"debezium": {"pg": {"tables": {name: {"entity": "order_line"}}}}}
    with pytest.raises(SettingsError, match=r"debezium\.pg\.tables\..* is not a full table name"):
        settings_from({}, "home", json.dumps(spec))


# --------------------------------------------------------------------------- reasons (defect 7, lows)


@pytest.mark.parametrize(
    "times",
    [
        {"ts_ms": YEAR_10000_MS},
        {"ts_ms": 2**62},
        {"ts_ms": 0, "envelope_ts_ms": YEAR_10000_MS},  # MySQL's 0: the envelope's time is used
    ],
)
def test_a_commit_time_beyond_year_9999_is_a_reason_and_the_rest_of_the_file_maps(
    times: dict[str, int],
) -> None:
    """SPEC 10: bad input is rejected with a reason, never a crash that loses the file."""
    bad = json.loads(message(lsn=901, ts_ms=times["ts_ms"]))
    bad["ts_ms"] = times.get("envelope_ts_ms", TS_MS)
    native, found = adapted(
        [message(), json.dumps(bad), message(lsn=902, image=ROW | {"order_id": "O9"})],
        debezium.DEFAULT_MAPPING,
    )
    first, rejected, last = outcomes(native)
    assert isinstance(first, Event) and isinstance(last, Event)
    assert isinstance(rejected, Rejection) and "commit time" in found[1]["reason"]


def test_an_unmapped_record_is_rejected_with_the_mappings_own_reason() -> None:
    """The rejection carries why the adapter could not map the record (the source record keeps
    it as delivered), not what validation says of a Debezium envelope read as an event."""
    native, found = adapted([message(op="t")], debezium.DEFAULT_MAPPING)
    [outcome] = outcomes(native)
    assert isinstance(outcome, Rejection) and outcome.reason is RejectReason.UNMAPPED_RECORD
    assert "op 't' is not one of c, u, d, r" in outcome.detail and found[0]["envelope"] == message(op="t")


def test_a_native_event_in_a_debezium_file_is_rejected_never_certified() -> None:
    """A line the adapter refused never reaches the warehouse as an event of its own."""
    native_event = {
        "event_id": "e1",
        "source_seq": 1,
        "schema_version": 1,
        "entity": "order_line",
        "op": "upsert",
        "key": {"order_id": "O7", "line_no": 2},
        "event_time": "2025-09-21T08:00:00Z",
        "after": ROW,
    }
    assert isinstance(parse_event(json.dumps(native_event), CTX), Event)
    native, _ = adapted([json.dumps(native_event)], debezium.DEFAULT_MAPPING)
    [outcome] = outcomes(native)
    assert isinstance(outcome, Rejection) and "not a Debezium change event" in outcome.detail


def test_a_line_cut_while_reading_is_a_record_with_its_reason() -> None:
    """SPEC 10: over-long lines are bounded before buffering; what reading kept of one is its
    record's envelope, and the reason says it was cut."""
    native, found = debezium.adapt_file([message(), "{prefix"], debezium.DEFAULT_MAPPING, cut={2: "too long"})
    first, rejected = outcomes(native)
    record = json.loads(found[1])
    assert isinstance(first, Event) and isinstance(rejected, Rejection)
    assert (
        record["reason"] == "too long" and record["envelope"] == "{prefix" and "too long" in rejected.detail
    )


NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(2**40, 2**64),  # past the calendar's end in ms, past 1e12 as a position
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.text(max_size=3),
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.fixed_dictionaries(
        {name: NUMBERS for name in ("lsn", "ts_ms", "pos", "row")},
    ),
    st.fixed_dictionaries({"business_date": NUMBERS, "line_no": NUMBERS, "order_id": NUMBERS}),
    st.sampled_from(["c", "u", "d", "r"]),
    NUMBERS,
)
def test_any_numbers_in_a_record_give_a_reason_or_a_refusal_never_a_crash(
    source: dict[str, Any], row: dict[str, Any], op: str, envelope_ts: Any
) -> None:
    """SPEC 10: bad input is a reason with the record kept, or (a position) a refusal of the
    file; ``land`` never dies with a traceback."""
    body = json.loads(message(op, ROW | row, file="mysql-bin.000003", **source))
    body["ts_ms"] = envelope_ts
    try:
        native, found = adapted([json.dumps(body)], debezium.DEFAULT_MAPPING)
    except debezium.PositionOutOfRange:
        return
    assert len(found) == 1 and len(native) == 1
    outcomes(native)
