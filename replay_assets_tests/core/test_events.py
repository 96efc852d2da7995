"""Per-event validation (SPEC 2.2, 3.4): every reject reason, the schema gate, hashing, totality."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import RejectReason, Violation
from replay_assets.core.events import (
    ENVELOPE_REQUIRED,
    TOMBSTONE_IMAGE_SHA,
    BatchViolation,
    Entity,
    Event,
    Op,
    Rejection,
    ValidationContext,
    canonical_json,
    parse_event,
    sha256_text,
    unmapped_line,
)
from replay_assets.core.upcast import Upcaster

CTX = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31))
UPCAST_CTX = dataclasses.replace(
    CTX, upcasters={2: Upcaster(2, rename={"after.amount_cents": "after.amount_minor"})}
)
SLICE_CTX = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), seq_low=10, seq_high=20)
QUICK = settings(max_examples=60, deadline=None, database=None)


def order_obj(**top: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "event_id": "e1",
        "source_seq": 15,
        "schema_version": 1,
        "entity": "order_line",
        "op": "upsert",
        "key": {"order_id": "O1001", "line_no": 1},
        "version": 3,
        "event_time": "2026-01-05T10:00:00Z",
        "after": {
            "order_id": "O1001",
            "line_no": 1,
            "store_id": "north",
            "customer_id": "C001",
            "product_id": "P100",
            "business_date": "2026-01-05",
            "quantity": 2,
            "amount_minor": 1500,
            "cost_minor": 700,
            "status": "active",
        },
    }
    obj.update(top)
    return obj


def customer_obj(**top: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "event_id": "e2",
        "source_seq": 16,
        "schema_version": 1,
        "entity": "customer",
        "op": "upsert",
        "key": {"customer_id": "C001"},
        "event_time": "2026-01-05T10:00:00Z",
        "after": {"customer_id": "C001", "name": "Ada Shop", "segment": "Retail"},
    }
    obj.update(top)
    return obj


def delete_obj(**top: Any) -> dict[str, Any]:
    obj = order_obj(op="delete")
    del obj["after"]
    obj.update(top)
    return obj


def edit(base: dict[str, Any], path: str, value: Any = ..., drop: bool = False) -> str:
    """JSON text of ``base`` with ``path`` ("after.status", "key.line_no", "op") set or dropped."""
    obj = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    target = obj
    for name in parents:
        target = target[name]
    if drop:
        del target[leaf]
    else:
        target[leaf] = value
    return json.dumps(obj)


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj)


WIDE_LINE = json.dumps(
    customer_obj(after={"customer_id": "C001", "name": "é" * 150, "segment": "s"}), ensure_ascii=False
)  # 150 characters more bytes than characters

# (case id, line, context, expected reason)
REJECT_CASES: list[tuple[str, str, ValidationContext, RejectReason]] = [
    # MALFORMED_JSON
    ("not-json", "{not json", CTX, RejectReason.MALFORMED_JSON),
    ("truncated", line(order_obj())[:-5], CTX, RejectReason.MALFORMED_JSON),
    ("empty-text", "", CTX, RejectReason.MALFORMED_JSON),
    ("json-array", "[1, 2]", CTX, RejectReason.MALFORMED_JSON),
    ("json-string", '"event"', CTX, RejectReason.MALFORMED_JSON),
    ("json-number", "42", CTX, RejectReason.MALFORMED_JSON),
    ("json-null", "null", CTX, RejectReason.MALFORMED_JSON),
    ("deep-nesting", "[" * 100_000 + "]" * 100_000, CTX, RejectReason.MALFORMED_JSON),
    # DUPLICATE_KEY: never "last one wins", at any depth
    (
        "duplicate-top-key",
        line(order_obj()).replace('"op": ', '"op": "delete", "op": '),
        CTX,
        RejectReason.DUPLICATE_KEY,
    ),
    (
        "duplicate-image-key",
        line(order_obj()).replace('"amount_minor": ', '"amount_minor": 1, "amount_minor": '),
        CTX,
        RejectReason.DUPLICATE_KEY,
    ),
    (
        "duplicate-key-key",
        line(order_obj()).replace('"key": {', '"key": {"line_no": 9, '),
        CTX,
        RejectReason.DUPLICATE_KEY,
    ),
    # INVALID_UTF8: bytes that are not UTF-8, decoded with surrogateescape
    (
        "invalid-utf8",
        b'{"event_id": "e\xff"}'.decode("utf-8", "surrogateescape"),
        CTX,
        RejectReason.INVALID_UTF8,
    ),
    # LINE_TOO_LONG
    (
        "line-too-long",
        line(order_obj()),
        ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), max_line_bytes=100),
        RejectReason.LINE_TOO_LONG,
    ),
    (
        "line-too-long-in-bytes-not-chars",
        WIDE_LINE,
        ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), max_line_bytes=len(WIDE_LINE)),
        RejectReason.LINE_TOO_LONG,
    ),
    # MISSING_FIELD
    *[
        (f"missing-{name}", edit(order_obj(), name, drop=True), CTX, RejectReason.MISSING_FIELD)
        for name in ENVELOPE_REQUIRED
    ],
    ("missing-after-status", edit(order_obj(), "after.status", drop=True), CTX, RejectReason.MISSING_FIELD),
    (
        "missing-after-amount",
        edit(order_obj(), "after.amount_minor", drop=True),
        CTX,
        RejectReason.MISSING_FIELD,
    ),
    ("missing-key-line_no", edit(order_obj(), "key.line_no", drop=True), CTX, RejectReason.MISSING_FIELD),
    (
        "missing-customer-segment",
        edit(customer_obj(), "after.segment", drop=True),
        CTX,
        RejectReason.MISSING_FIELD,
    ),
    # UNKNOWN_FIELD
    ("unknown-top", edit(order_obj(), "extra", 1), CTX, RejectReason.UNKNOWN_FIELD),
    ("unknown-top-before", edit(order_obj(), "before", None), CTX, RejectReason.UNKNOWN_FIELD),
    ("unknown-after", edit(order_obj(), "after.discount", 5), CTX, RejectReason.UNKNOWN_FIELD),
    ("unknown-key", edit(order_obj(), "key.store_id", "north"), CTX, RejectReason.UNKNOWN_FIELD),
    ("unknown-customer-after", edit(customer_obj(), "after.email", "x@y"), CTX, RejectReason.UNKNOWN_FIELD),
    (
        "customer-key-on-order",
        edit(order_obj(), "key", {"customer_id": "C001"}),
        CTX,
        RejectReason.MISSING_FIELD,
    ),
    # BAD_VALUE
    ("negative-amount", edit(order_obj(), "after.amount_minor", -1), CTX, RejectReason.BAD_VALUE),
    ("amount-too-big", edit(order_obj(), "after.amount_minor", 10**12 + 1), CTX, RejectReason.BAD_VALUE),
    ("float-amount", edit(order_obj(), "after.amount_minor", 12.5), CTX, RejectReason.BAD_VALUE),
    ("string-amount", edit(order_obj(), "after.amount_minor", "12"), CTX, RejectReason.BAD_VALUE),
    ("bool-quantity", edit(order_obj(), "after.quantity", True), CTX, RejectReason.BAD_VALUE),
    ("bool-line_no-in-key", edit(order_obj(), "key.line_no", True), CTX, RejectReason.BAD_VALUE),
    ("null-cost", edit(order_obj(), "after.cost_minor", None), CTX, RejectReason.BAD_VALUE),
    ("status-paid", edit(order_obj(), "after.status", "paid"), CTX, RejectReason.BAD_VALUE),
    ("status-deleted", edit(order_obj(), "after.status", "deleted"), CTX, RejectReason.BAD_VALUE),
    ("event_time-text", edit(order_obj(), "event_time", "yesterday"), CTX, RejectReason.BAD_VALUE),
    ("event_time-number", edit(order_obj(), "event_time", 1767607200), CTX, RejectReason.BAD_VALUE),
    ("event_time-naive", edit(order_obj(), "event_time", "2026-01-05T10:00:00"), CTX, RejectReason.BAD_VALUE),
    (
        "event_time-non-utc",
        edit(order_obj(), "event_time", "2026-01-05T10:00:00+02:00"),
        CTX,
        RejectReason.BAD_VALUE,
    ),
    ("delete-with-after", line(order_obj(op="delete")), CTX, RejectReason.BAD_VALUE),
    ("upsert-without-after", edit(order_obj(), "after", drop=True), CTX, RejectReason.BAD_VALUE),
    ("upsert-after-null", edit(order_obj(), "after", None), CTX, RejectReason.BAD_VALUE),
    ("upsert-after-list", edit(order_obj(), "after", []), CTX, RejectReason.BAD_VALUE),
    ("entity-sale", edit(order_obj(), "entity", "sale"), CTX, RejectReason.BAD_VALUE),
    ("op-I", edit(order_obj(), "op", "I"), CTX, RejectReason.BAD_VALUE),
    ("key-string", edit(order_obj(), "key", "O1001|1"), CTX, RejectReason.BAD_VALUE),
    ("source_seq-negative", edit(order_obj(), "source_seq", -1), CTX, RejectReason.BAD_VALUE),
    ("source_seq-string", edit(order_obj(), "source_seq", "15"), CTX, RejectReason.BAD_VALUE),
    ("version-negative", edit(order_obj(), "version", -3), CTX, RejectReason.BAD_VALUE),
    ("version-bool", edit(order_obj(), "version", True), CTX, RejectReason.BAD_VALUE),
    ("version-null", edit(order_obj(), "version", None), CTX, RejectReason.BAD_VALUE),
    (
        "business_date-short",
        edit(order_obj(), "after.business_date", "2026-1-5"),
        CTX,
        RejectReason.BAD_VALUE,
    ),
    (
        "business_date-not-calendar",
        edit(order_obj(), "after.business_date", "2026-02-30"),
        CTX,
        RejectReason.BAD_VALUE,
    ),
    (
        "business_date-datetime",
        edit(order_obj(), "after.business_date", "2026-01-05T00:00:00Z"),
        CTX,
        RejectReason.BAD_VALUE,
    ),
    ("customer-name-empty", edit(customer_obj(), "after.name", ""), CTX, RejectReason.BAD_VALUE),
    ("customer-name-too-long", edit(customer_obj(), "after.name", "n" * 201), CTX, RejectReason.BAD_VALUE),
    ("customer-segment-int", edit(customer_obj(), "after.segment", 3), CTX, RejectReason.BAD_VALUE),
    # BAD_ID
    ("event_id-space", edit(order_obj(), "event_id", "e 1"), CTX, RejectReason.BAD_ID),
    ("event_id-leading-dash", edit(order_obj(), "event_id", "-e1"), CTX, RejectReason.BAD_ID),
    ("event_id-81-chars", edit(order_obj(), "event_id", "e" * 81), CTX, RejectReason.BAD_ID),
    ("event_id-int", edit(order_obj(), "event_id", 17), CTX, RejectReason.BAD_ID),
    ("key-order_id-slash", edit(order_obj(), "key.order_id", "O/1"), CTX, RejectReason.BAD_ID),
    ("after-store-empty", edit(order_obj(), "after.store_id", ""), CTX, RejectReason.BAD_ID),
    ("after-product-null", edit(order_obj(), "after.product_id", None), CTX, RejectReason.BAD_ID),
    ("after-customer-unicode", edit(order_obj(), "after.customer_id", "Cé"), CTX, RejectReason.BAD_ID),
    ("customer-key-space", edit(customer_obj(), "key.customer_id", "C 1"), CTX, RejectReason.BAD_ID),
    # KEY_IMAGE_MISMATCH
    (
        "after-order_id-differs",
        edit(order_obj(), "after.order_id", "O9999"),
        CTX,
        RejectReason.KEY_IMAGE_MISMATCH,
    ),
    ("after-line_no-differs", edit(order_obj(), "after.line_no", 2), CTX, RejectReason.KEY_IMAGE_MISMATCH),
    (
        "customer-after-id-differs",
        edit(customer_obj(), "after.customer_id", "C002"),
        CTX,
        RejectReason.KEY_IMAGE_MISMATCH,
    ),
    # OUTSIDE_DECLARED_SLICE (slice 10..20)
    ("below-slice", edit(order_obj(), "source_seq", 9), SLICE_CTX, RejectReason.OUTSIDE_DECLARED_SLICE),
    ("above-slice", edit(order_obj(), "source_seq", 21), SLICE_CTX, RejectReason.OUTSIDE_DECLARED_SLICE),
    (
        "below-low-only",
        edit(order_obj(), "source_seq", 4),
        ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), seq_low=5),
        RejectReason.OUTSIDE_DECLARED_SLICE,
    ),
    (
        "above-high-only",
        edit(order_obj(), "source_seq", 6),
        ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), seq_high=5),
        RejectReason.OUTSIDE_DECLARED_SLICE,
    ),
    # BUSINESS_DATE_OUT_OF_RANGE (window 2026-01-01..2026-01-31)
    (
        "business_date-before-start",
        edit(order_obj(), "after.business_date", "2025-12-31"),
        CTX,
        RejectReason.BUSINESS_DATE_OUT_OF_RANGE,
    ),
    (
        "business_date-after-end",
        edit(order_obj(), "after.business_date", "2026-02-01"),
        CTX,
        RejectReason.BUSINESS_DATE_OUT_OF_RANGE,
    ),
    # UPCAST_FAILED (a declared v2 whose renamed field arrives under both names)
    (
        "upcast-both-names",
        line(order_obj(schema_version=2, after={**order_obj()["after"], "amount_cents": 5})),
        dataclasses.replace(
            CTX, upcasters={2: Upcaster(2, rename={"after.amount_cents": "after.amount_minor"})}
        ),
        RejectReason.UPCAST_FAILED,
    ),
    # UNMAPPED_RECORD (the line an adapter writes for a record it could not map)
    (
        "unmapped",
        unmapped_line("debezium", 3, "table 'x.y' is not mapped"),
        CTX,
        RejectReason.UNMAPPED_RECORD,
    ),
]


@pytest.mark.parametrize(
    ("text", "ctx", "reason"), [c[1:] for c in REJECT_CASES], ids=[c[0] for c in REJECT_CASES]
)
def test_rejection_table(text: str, ctx: ValidationContext, reason: RejectReason) -> None:
    outcome = parse_event(text, ctx)
    assert isinstance(outcome, Rejection), outcome
    assert outcome.reason is reason
    assert outcome.detail


def test_table_covers_every_reject_reason() -> None:
    assert {c[3] for c in REJECT_CASES} == set(RejectReason)


ACCEPT_CASES: list[tuple[str, str, ValidationContext]] = [
    ("order-upsert", line(order_obj()), CTX),
    ("customer-upsert", line(customer_obj()), CTX),
    ("delete-without-after", line(delete_obj()), CTX),
    ("delete-after-null", line(delete_obj(after=None)), CTX),
    ("seq-at-slice-low", edit(order_obj(), "source_seq", 10), SLICE_CTX),
    ("seq-at-slice-high", edit(order_obj(), "source_seq", 20), SLICE_CTX),
    ("business_date-at-start", edit(order_obj(), "after.business_date", "2026-01-01"), CTX),
    ("business_date-at-end", edit(order_obj(), "after.business_date", "2026-01-31"), CTX),
    ("event_time-offset-zero", edit(order_obj(), "event_time", "2026-01-05T10:00:00+00:00"), CTX),
    ("event_time-fraction", edit(order_obj(), "event_time", "2026-01-05T10:00:00.123Z"), CTX),
    ("cancelled", edit(order_obj(), "after.status", "cancelled"), CTX),
    ("zero-amounts", line(order_obj(source_seq=0, version=0)), CTX),
    ("max-int", edit(order_obj(), "after.amount_minor", 10**12), CTX),
    ("id-with-pipe", line(order_obj(event_id="a.b_c-d|e")), CTX),
    ("id-80-chars", edit(order_obj(), "event_id", "e" * 80), CTX),
    (
        "wide-line-at-byte-limit",
        WIDE_LINE,
        ValidationContext(
            dt.date(2026, 1, 1), dt.date(2026, 1, 31), max_line_bytes=len(WIDE_LINE.encode("utf-8"))
        ),
    ),
    (
        "line-exactly-at-limit",
        line(order_obj()),
        ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 31), max_line_bytes=len(line(order_obj()))),
    ),
]


@pytest.mark.parametrize(("text", "ctx"), [c[1:] for c in ACCEPT_CASES], ids=[c[0] for c in ACCEPT_CASES])
def test_acceptance_table(text: str, ctx: ValidationContext) -> None:
    assert isinstance(parse_event(text, ctx), Event)


def test_rejection_names_the_event_when_its_id_is_readable() -> None:
    rejected = parse_event(edit(order_obj(), "after.status", "paid"), CTX)
    assert isinstance(rejected, Rejection)
    assert rejected.event_id == "e1"
    malformed = parse_event("{nope", CTX)
    assert isinstance(malformed, Rejection)
    assert malformed.event_id is None
    bad_id = parse_event(edit(order_obj(), "event_id", "e 1"), CTX)
    assert isinstance(bad_id, Rejection)
    assert bad_id.event_id is None


def test_rejection_detail_names_the_field() -> None:
    outcome = parse_event(edit(order_obj(), "after.discount", 5), CTX)
    assert isinstance(outcome, Rejection)
    assert "discount" in outcome.detail
    missing = parse_event(edit(order_obj(), "key.line_no", drop=True), CTX)
    assert isinstance(missing, Rejection)
    assert "line_no" in missing.detail


@pytest.mark.parametrize("version", [2, 0, "1", None, [1]])
def test_schema_gate_blocks_the_batch(version: Any) -> None:
    outcome = parse_event(line(order_obj(schema_version=version)), CTX)
    assert isinstance(outcome, BatchViolation)
    assert outcome.rule is Violation.UNSUPPORTED_SCHEMA_VERSION
    assert outcome.event_id == "e1"
    assert "source_seq=15" in outcome.detail


def test_schema_gate_comes_before_per_event_validation() -> None:
    broken = order_obj(schema_version=2, extra_field=1)
    broken["after"]["status"] = "paid"
    outcome = parse_event(line(broken), CTX)
    assert isinstance(outcome, BatchViolation)
    assert outcome.rule is Violation.UNSUPPORTED_SCHEMA_VERSION


def test_schema_gate_with_unreadable_id_and_seq() -> None:
    outcome = parse_event(line(order_obj(schema_version=2, event_id=5, source_seq="x")), CTX)
    assert isinstance(outcome, BatchViolation)
    assert outcome.event_id is None
    assert "source_seq=?" in outcome.detail


def test_schema_gate_rejects_boolean_schema_version() -> None:
    outcome = parse_event(line(order_obj(schema_version=True)), CTX)
    assert not isinstance(outcome, Event)


def test_version_defaults_to_source_seq() -> None:
    obj = order_obj(source_seq=42)
    del obj["version"]
    outcome = parse_event(line(obj), CTX)
    assert isinstance(outcome, Event)
    assert outcome.version == 42
    explicit = parse_event(line(order_obj(source_seq=42, version=7)), CTX)
    assert isinstance(explicit, Event)
    assert explicit.version == 7


def test_order_event_fields() -> None:
    outcome = parse_event(line(order_obj()), CTX)
    assert isinstance(outcome, Event)
    assert outcome.event_id == "e1"
    assert outcome.source_seq == 15
    assert outcome.entity is Entity.ORDER_LINE
    assert outcome.op is Op.UPSERT
    assert outcome.key == '["O1001",1]'
    assert outcome.version == 3
    assert outcome.event_time == "2026-01-05T10:00:00Z"
    assert outcome.image == order_obj()["after"]
    assert outcome.image_sha256 == sha256_text(canonical_json(order_obj()["after"]))


def test_customer_event() -> None:
    outcome = parse_event(line(customer_obj()), CTX)
    assert isinstance(outcome, Event)
    assert outcome.entity is Entity.CUSTOMER
    assert outcome.op is Op.UPSERT
    assert outcome.key == '["C001"]'
    assert outcome.version == 16
    assert outcome.image == {"customer_id": "C001", "name": "Ada Shop", "segment": "Retail"}


def test_delete_event_is_a_tombstone() -> None:
    outcome = parse_event(line(delete_obj()), CTX)
    assert isinstance(outcome, Event)
    assert outcome.op is Op.DELETE
    assert outcome.image is None
    assert outcome.image_sha256 == TOMBSTONE_IMAGE_SHA
    assert outcome.key == '["O1001",1]'
    with_null = parse_event(line(delete_obj(after=None)), CTX)
    assert isinstance(with_null, Event)
    assert with_null.content_sha256 == outcome.content_sha256


def test_customer_delete() -> None:
    obj = customer_obj(op="delete")
    del obj["after"]
    outcome = parse_event(line(obj), CTX)
    assert isinstance(outcome, Event)
    assert outcome.entity is Entity.CUSTOMER
    assert outcome.image is None


def test_key_text_keeps_ids_with_the_separator_apart() -> None:
    a = order_obj(key={"order_id": "O1|1", "line_no": 2})
    a["after"].update(order_id="O1|1", line_no=2)
    b = order_obj(key={"order_id": "O1", "line_no": 2})
    b["after"].update(order_id="O1", line_no=2)
    ea, eb = parse_event(line(a), CTX), parse_event(line(b), CTX)
    assert isinstance(ea, Event)
    assert isinstance(eb, Event)
    assert ea.key != eb.key


def _permuted(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, dict):
        keys = draw(st.permutations(list(value)))
        return {k: _permuted(value[k], draw) for k in keys}
    return value


@QUICK
@given(st.data(), st.sampled_from([order_obj(), customer_obj(), delete_obj()]), st.sampled_from([None, 2, 0]))
def test_content_hash_ignores_key_order_and_whitespace(data: st.DataObject, base: dict, indent: Any) -> None:
    permuted = _permuted(base, data.draw)
    first = parse_event(json.dumps(base), CTX)
    second = parse_event(json.dumps(permuted, indent=indent), CTX)
    assert isinstance(first, Event)
    assert isinstance(second, Event)
    assert second.content_sha256 == first.content_sha256
    assert second.image_sha256 == first.image_sha256
    assert second.key == first.key


@pytest.mark.parametrize(
    "path,value",
    [
        ("after.amount_minor", 1501),
        ("after.status", "cancelled"),
        ("event_time", "2026-01-05T10:00:01Z"),
        ("version", 4),
        ("event_id", "e1b"),
        ("source_seq", 16),
    ],
)
def test_content_hash_changes_with_content(path: str, value: Any) -> None:
    first = parse_event(line(order_obj()), CTX)
    second = parse_event(edit(order_obj(), path, value), CTX)
    assert isinstance(first, Event)
    assert isinstance(second, Event)
    assert second.content_sha256 != first.content_sha256


def test_image_hash_ignores_envelope_changes() -> None:
    first = parse_event(line(order_obj()), CTX)
    second = parse_event(line(order_obj(event_id="e9", source_seq=99, version=9)), CTX)
    assert isinstance(first, Event)
    assert isinstance(second, Event)
    assert first.image_sha256 == second.image_sha256
    assert first.content_sha256 != second.content_sha256


# ---- totality -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**13), 10**13)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
OUTCOMES = (Event, Rejection, BatchViolation)


@QUICK
@given(st.text(max_size=300))
def test_parse_event_is_total_on_arbitrary_text(text: str) -> None:
    assert isinstance(parse_event(text, CTX), OUTCOMES)


@QUICK
@given(json_values)
def test_parse_event_is_total_on_arbitrary_json(value: Any) -> None:
    assert isinstance(parse_event(json.dumps(value), CTX), OUTCOMES)


@QUICK
@given(st.dictionaries(st.sampled_from([*order_obj(), "extra"]), json_values, max_size=10))
def test_parse_event_is_total_on_envelope_shaped_json(obj: dict[str, Any]) -> None:
    assert isinstance(parse_event(json.dumps(obj), CTX), OUTCOMES)


FIELD_PATHS = [
    *[name for name in order_obj() if name not in {"key", "after"}],
    *[f"key.{name}" for name in order_obj()["key"]],
    *[f"after.{name}" for name in order_obj()["after"]],
]


@QUICK
@given(st.sampled_from(FIELD_PATHS), json_values.filter(lambda v: not isinstance(v, list | dict)))
def test_parse_event_is_total_when_one_field_gets_any_scalar(path: str, value: Any) -> None:
    assert isinstance(parse_event(edit(order_obj(), path, value), CTX), OUTCOMES)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(st.sampled_from(FIELD_PATHS), json_values)
def test_parse_event_is_total_when_one_field_gets_any_json(path: str, value: Any) -> None:
    assert isinstance(parse_event(edit(order_obj(), path, value), CTX), OUTCOMES)


UNHASHABLE_CASES: list[tuple[str, Callable[[], str]]] = [
    ("entity-list", lambda: edit(order_obj(), "entity", ["order_line"])),
    ("op-object", lambda: edit(order_obj(), "op", {"upsert": 1})),
    ("status-list", lambda: edit(order_obj(), "after.status", ["active"])),
]


@pytest.mark.parametrize("make", [c[1] for c in UNHASHABLE_CASES], ids=[c[0] for c in UNHASHABLE_CASES])
def test_unhashable_values_are_rejected_not_raised(make: Callable[[], str]) -> None:
    outcome = parse_event(make(), CTX)
    assert isinstance(outcome, Rejection)
    assert outcome.reason is RejectReason.BAD_VALUE


def test_lone_surrogate_escape_in_text_is_rejected_not_raised() -> None:
    text = '{"event_id":"e2","source_seq":16,"schema_version":1,"entity":"customer","op":"upsert",'
    text += '"key":{"customer_id":"C001"},"event_time":"2026-01-05T10:00:00Z",'
    text += '"after":{"customer_id":"C001","name":"\\ud800","segment":"Retail"}}'
    assert text.isascii()
    outcome = parse_event(text, CTX)
    assert isinstance(outcome, Rejection)
