"""The vectorised validation (DuckDB) certifies a line only when the oracle ``parse_event``
accepts it, and then computes exactly the oracle's event; everything else is left to the oracle."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import duckdb
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.events import Event, ValidationContext, parse_event
from replay_assets.storage.landing.validation import candidates, certified_sql, certify

CTX = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 10, 2), None, None)
SLICED = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 10, 2), 10, 500)
ORDER_AFTER = {
    "order_id": "O1",
    "line_no": 1,
    "store_id": "S1",
    "customer_id": "C1",
    "product_id": "P1",
    "business_date": "2026-09-30",
    "quantity": 2,
    "amount_minor": 1500,
    "cost_minor": 900,
    "status": "active",
}
BASE = {
    "event_id": "E1",
    "source_seq": 100,
    "schema_version": 1,
    "entity": "order_line",
    "op": "upsert",
    "key": {"order_id": "O1", "line_no": 1},
    "version": 100,
    "event_time": "2026-10-01T00:00:00Z",
    "after": ORDER_AFTER,
}
CUSTOMER = {
    "event_id": "E2",
    "source_seq": 101,
    "schema_version": 1,
    "entity": "customer",
    "op": "upsert",
    "key": {"customer_id": "C1"},
    "event_time": "2026-10-01T00:00:00+00:00",
    "after": {"customer_id": "C1", "name": "Ana Lúcia", "segment": "retail"},
}
DELETE = {**BASE, "event_id": "E3", "op": "delete", "after": None}
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.0, 1.5, 10**12, 10**12 + 1, 2**64, "", "x", "1", "O|1.a-b_c",
    " O1", "Ö1", "a" * 80, "a" * 201, [], {}, "2026-02-30", "2026-09-30", "2019-12-31", "2026-10-03",
    "2026-10-01T00:00:00", "2026-10-01T00:00:00.123Z", "2026-10-01T24:00:00Z", "2026-10-01 00:00:00Z",
    "2026-10-01T00:00:00+01:00", "2026-10-01T00:00:00.1234Z", "order_line", "customer", "delete",
    "upsert", "cancelled", "deleted", 5, 50, 600,
]  # fmt: skip
FIELDS = [*BASE, "coupon"]
IMAGE_FIELDS = [*ORDER_AFTER, "name", "segment", "extra"]


@st.composite
def lines(draw: st.DrawFn) -> str:
    event = json.loads(json.dumps(draw(st.sampled_from([BASE, CUSTOMER, DELETE]))))
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "key", "after", "drop"]))
        value = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))  # ``{}`` and ``[]`` are shared
        if where == "top":
            event[draw(st.sampled_from(FIELDS))] = value
        elif where == "drop":
            event.pop(draw(st.sampled_from(FIELDS)), None)
        elif isinstance(event.get(where), dict):
            event[where][draw(st.sampled_from(IMAGE_FIELDS))] = value
    layouts = ["compact", "spaced", "sorted", "raw_dup", "nested_dup", "trailing", "padded", "cut"]
    layout = draw(st.sampled_from(layouts))
    if layout == "compact":
        return json.dumps(event, separators=(",", ":"), ensure_ascii=draw(st.booleans()))
    if layout == "spaced":
        return json.dumps(event)
    if layout == "sorted":
        return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    if layout == "raw_dup":
        return text[:-1] + ',"op":"delete"}'
    if layout == "nested_dup":  # a key twice inside key or after: the first value equals the second
        inner = draw(st.sampled_from(['"key":{', '"after":{']))
        field = draw(st.sampled_from(['"order_id":"O1",', '"line_no":1,', '"status":"active",']))
        return text.replace(inner, inner + field, 1)
    if layout == "trailing":
        return text[:-1] + ",}"
    if layout == "cut":
        return text[: draw(st.integers(1, len(text) - 1))]
    return text + "  "


def fast(lines_: list[str], ctx: ValidationContext) -> dict[int, dict[str, Any]]:
    frame = pl.DataFrame({"line_number": range(1, len(lines_) + 1), "line": lines_})
    frame = frame.filter(candidates(frame, ctx.max_line_bytes))
    con = duckdb.connect()
    try:
        return {row["line_number"]: row for row in certify(con, frame, ctx).iter_rows(named=True)}
    finally:
        con.close()


def expected(event: Event) -> dict[str, Any]:
    key = json.loads(event.key)
    out: dict[str, Any] = {
        "event_id": event.event_id,
        "source_seq": event.source_seq,
        "entity": event.entity.value,
        "op": event.op.value,
        "key": event.key,
        "version": event.version,
        "event_time": event.event_time,
        "content_sha256": event.content_sha256,
        "image_sha256": event.image_sha256,
    }
    image: dict[str, Any] = dict.fromkeys((*ORDER_AFTER, "name", "segment"))
    names = ["order_id", "line_no"] if event.entity.value == "order_line" else ["customer_id"]
    image.update(zip(names, key, strict=True))
    image.update(event.image or {})
    return {**out, **image}


def test_well_formed_lines_are_certified_with_the_oracles_values() -> None:
    lines_ = [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in (BASE, CUSTOMER, DELETE)]
    lines_ += [json.dumps(e, ensure_ascii=False) for e in (BASE, CUSTOMER, DELETE)]
    got = fast(lines_, CTX)
    assert sorted(got) == list(range(1, 7))
    for number, line in enumerate(lines_, start=1):
        event = parse_event(line, CTX)
        assert isinstance(event, Event)
        assert {k: got[number][k] for k in expected(event)} == expected(event)


# the grammar tier takes the contract's renderings first now; CI draws new examples every run
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines(), min_size=1, max_size=30), st.booleans())
def test_fast_path_certifies_only_what_the_oracle_accepts_and_agrees_on_it(
    lines_: list[str], sliced: bool
) -> None:
    ctx = SLICED if sliced else CTX
    got = fast(lines_, ctx)
    for number, line in enumerate(lines_, start=1):
        outcome = parse_event(line, ctx)
        if number in got:
            assert isinstance(outcome, Event), (line, outcome)
            assert {k: got[number][k] for k in expected(outcome)} == expected(outcome), line


def test_the_contract_and_the_canonical_layouts_take_the_exact_rendering_tier() -> None:
    """Compact lines in the contract's field order or sorted are proved by their own rendering
    (tier 1); a spaced line needs the field-path tier."""
    no_after = {k: v for k, v in DELETE.items() if k != "after"}
    no_version = {k: v for k, v in BASE.items() if k != "version"}
    events = [BASE, CUSTOMER, DELETE, no_after, no_version]
    compact = [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in events]
    ordered = [json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for e in events[:4]]
    lines_ = [*compact, *ordered, json.dumps(BASE)]
    sql, _ = certified_sql(CTX, "_lines")
    tier_one = sql.split("), typed1 AS")[0] + ") SELECT line_number FROM t1_ok ORDER BY 1"
    con = duckdb.connect()
    try:
        con.register("_lines", pl.DataFrame({"line_number": range(1, len(lines_) + 1), "line": lines_}))
        exact = [row[0] for row in con.execute(tier_one).fetchall()]
    finally:
        con.close()
    assert exact == list(range(1, len(lines_)))
    assert sorted(fast(lines_, CTX)) == list(range(1, len(lines_) + 1))
