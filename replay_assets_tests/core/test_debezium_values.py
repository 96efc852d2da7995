"""Debezium's value encodings decoded into the contract (SPEC 2.2: amounts are integer minor
units in 0..1e12, business_date a calendar date, event_time ISO-8601 UTC; SPEC 10, v4: a value
that cannot be taken exactly is refused with a reason naming the field and column, never
rounded and never quoting the value)."""

from __future__ import annotations

import base64
import decimal
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core import debezium, strict_json
from replay_assets.core.debezium_time import BadValue
from replay_assets.core.debezium_values import (
    DECIMAL,
    VARIABLE_DECIMAL,
    Column,
    FieldSchema,
    JsonNumber,
    decode,
    parse_column,
    row_schemas,
)

AMOUNT = Column("amount")
ZONED = "io.debezium.time.ZonedTimestamp"


def b64(unscaled: int) -> str:
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def outcome(field: str, column: Column, value: Any, schema: FieldSchema | None = None) -> Any:
    try:
        return decode(field, column, value, schema)
    except BadValue as bad:
        return f"refused: {bad}"


def read_number(text: str) -> Any:
    """A number as the adapter reads a converter line (its text kept)."""
    return strict_json.loads(f'{{"v": {text}}}', parse_float=JsonNumber)["v"]


@settings(max_examples=400, deadline=None)
@given(
    unscaled=st.integers(-(10**15) + 1, 10**15 - 1),  # a double holds 15 significant digits exactly
    encoded_scale=st.integers(0, 14),
    scale=st.integers(0, 12),
)
def test_base64_string_and_double_give_the_same_minor_units_or_the_same_refusal(
    unscaled: int, encoded_scale: int, scale: int
) -> None:
    """SPEC 2.2: one amount, whatever ``decimal.handling.mode`` sent it, is one number of minor
    units (exactly ``amount * 10**scale``) or one refusal with one reason."""
    amount = decimal.Decimal(f"{unscaled}E-{encoded_scale}")
    column = Column("amount", scale=scale)
    encodings = {
        "precise": outcome("amount_minor", column, b64(unscaled), FieldSchema(DECIMAL, encoded_scale)),
        "variable": outcome(
            "amount_minor",
            column,
            {"scale": encoded_scale, "value": b64(unscaled)},
            FieldSchema(VARIABLE_DECIMAL),
        ),
        "string": outcome("amount_minor", column, f"{amount:f}", FieldSchema(None)),
        "double": outcome("amount_minor", column, read_number(repr(float(amount))), FieldSchema(None)),
    }
    assert len(set(encodings.values())) == 1, encodings
    minor = amount.scaleb(scale, decimal.Context(prec=60))
    if minor != minor.to_integral_value():
        assert encodings["string"].endswith(f"more fractional digits than its scale {scale}: never rounded")
    elif minor < 0:
        assert encodings["string"].endswith("is negative: the contract's amounts are 0..1e12")
    elif minor > 10**12:
        assert encodings["string"].endswith("is beyond the contract's 1e12 minor units")
    else:
        assert encodings["string"] == int(minor)


def test_a_double_is_read_from_its_text_never_through_a_float() -> None:
    """SPEC 2.2: ``10.990000000000000001`` is the float 10.99 but not a whole number of cents."""
    column = Column("amount", scale=2)
    assert decode("amount_minor", column, read_number("10.99"), None) == 1099
    assert decode("amount_minor", column, read_number("1.23456789E7"), None) == 1234567890
    with pytest.raises(BadValue, match=r"amount_minor \(column 'amount'\) has more fractional digits"):
        decode("amount_minor", column, read_number("10.990000000000000001"), None)
    with pytest.raises(BadValue, match="beyond the contract's 1e12"):
        decode("amount_minor", column, read_number("1e999"), None)  # the float is inf; the text says why


@pytest.mark.parametrize(
    ("value", "schema", "column", "reason"),
    [
        ("BEs=", FieldSchema(DECIMAL), AMOUNT, "is base64 decimal bytes: declare its scale"),
        ("not base64!", FieldSchema(DECIMAL, 2), AMOUNT, "is not base64 decimal bytes"),
        ("", FieldSchema(DECIMAL, 2), AMOUNT, "is not base64 decimal bytes"),
        ({"scale": 2}, FieldSchema(VARIABLE_DECIMAL), AMOUNT, "is not a VariableScaleDecimal"),
        ("10.99", None, AMOUNT, "is a decimal: declare its scale"),
        ("1,099", None, Column("amount", scale=2), "is not decimal text"),
        ("NaN", None, Column("amount", scale=2), "is not decimal text"),
        (float("nan"), None, Column("amount", scale=2), "is not a finite number"),
    ],
)
def test_an_amount_that_cannot_be_read_is_refused_naming_the_column(
    value: Any, schema: FieldSchema | None, column: Column, reason: str
) -> None:
    """SPEC 10 (v4): refused with a reason naming field and column, never guessed."""
    with pytest.raises(BadValue, match=r"^amount_minor \(column 'amount'\) ") as refused:
        decode("amount_minor", column, value, schema)
    assert reason in str(refused.value)


def test_the_schema_scale_reads_the_bytes_and_the_declared_scale_makes_the_minor_unit() -> None:
    """SPEC 2.2: NUMERIC(12,4) bytes at a declared cent scale: 10.9900 is 1099 cents."""
    assert decode("amount_minor", AMOUNT, b64(109900), FieldSchema(DECIMAL, 4)) == 109900
    assert decode("amount_minor", Column("amount", scale=2), b64(109900), FieldSchema(DECIMAL, 4)) == 1099
    assert decode("amount_minor", Column("amount", scale=2), b64(-0), FieldSchema(DECIMAL, 2)) == 0
    assert decode("amount_minor", Column("amount", scale=2), 12, None) == 1200  # a whole amount
    assert decode("amount_minor", AMOUNT, 1099, None) == 1099  # an integer minor-unit column as it is
    bare = Column("amount", scale=2, type=DECIMAL)
    assert decode("amount_minor", bare, b64(1099), None) == 1099  # a bare message's declared type


# 2026-09-20T22:30:00Z: the 20th in UTC, the 21st in Paris (CEST)
INSTANT_S = 1789943400
TEMPORALS = [
    ("io.debezium.time.Timestamp", INSTANT_S * 10**3, "2026-09-20T22:30:00.000Z"),
    ("org.apache.kafka.connect.data.Timestamp", INSTANT_S * 10**3 + 7, "2026-09-20T22:30:00.007Z"),
    ("io.debezium.time.MicroTimestamp", INSTANT_S * 10**6 + 123456, "2026-09-20T22:30:00.123456Z"),
    ("io.debezium.time.NanoTimestamp", INSTANT_S * 10**9 + 123456789, "2026-09-20T22:30:00.123456789Z"),
    ("io.debezium.time.ZonedTimestamp", "2026-09-21T00:30:00+02:00", "2026-09-20T22:30:00.000000Z"),
    ("io.debezium.time.ZonedTimestamp", "2026-09-20T22:30:00.5Z", "2026-09-20T22:30:00.500000Z"),
]


@pytest.mark.parametrize(("logical", "value", "utc"), TEMPORALS)
def test_every_timestamp_encoding_gives_the_instant_and_the_business_day_in_the_declared_zone(
    logical: str, value: Any, utc: str
) -> None:
    """SPEC 2.2: event_time is ISO-8601 UTC; business_date is YYYY-MM-DD, the timestamp's day
    in the declared time zone (UTC when none is declared)."""
    schema = FieldSchema(logical)
    assert decode("event_time", Column("created_at"), value, schema) == utc
    assert decode("business_date", Column("created_at"), value, schema) == "2026-09-20"
    paris = Column("created_at", time_zone="Europe/Paris")
    assert decode("business_date", paris, value, schema) == "2026-09-21"
    declared = Column("created_at", time_zone="Europe/Paris", type=logical)
    assert decode("business_date", declared, value, None) == "2026-09-21"  # bare: the declared type


@pytest.mark.parametrize("logical", ["io.debezium.time.Date", "org.apache.kafka.connect.data.Date", None])
def test_a_date_is_days_since_1970(logical: str | None) -> None:
    """SPEC 2.2: ``io.debezium.time.Date`` and Connect's ``Date`` count days since 1970-01-01."""
    assert decode("business_date", Column("d"), 20717, FieldSchema(logical)) == "2026-09-21"
    with pytest.raises(BadValue, match="business_date \\(column 'd'\\) is a day outside the calendar"):
        decode("business_date", Column("d"), 10**9, FieldSchema(logical))


@pytest.mark.parametrize(
    ("logical", "value", "reason"),
    [
        ("io.debezium.time.ZonedTimestamp", "2026-09-20T22:30:00", "with an offset"),
        ("io.debezium.time.ZonedTimestamp", 1789943400, "with an offset"),
        ("io.debezium.time.MicroTimestamp", "2026-09-20", "is not a whole count since 1970"),
        ("io.debezium.time.Timestamp", 10**18, "outside the years 1..9999"),
        ("io.debezium.time.Date", "2026-09-20", "is not a whole number of days"),
    ],
)
def test_a_timestamp_that_cannot_be_read_is_refused(logical: str, value: Any, reason: str) -> None:
    """SPEC 10 (v4): refused with the reason, never a crash."""
    with pytest.raises(BadValue, match=reason):
        decode("business_date", Column("created_at"), value, FieldSchema(logical))


@pytest.mark.parametrize(
    ("field", "spec", "reason"),
    [
        ("amount_minor", {"column": "amount", "scale": 13}, "scale is a whole number 0..12"),
        ("amount_minor", {"column": "amount", "scale": True}, "scale is a whole number 0..12"),
        ("status", {"column": "state", "scale": 2}, "for an integer field only"),
        ("business_date", {"column": "at", "time_zone": "Mars/Olympus"}, "is an IANA time zone name"),
        ("business_date", {"column": "at", "time_zone": "../../etc/passwd"}, "is an IANA time zone name"),
        ("business_date", {"column": "at", "time_zone": "/etc/localtime"}, "is an IANA time zone name"),
        ("event_time", {"column": "at", "time_zone": "UTC"}, "for business_date only"),
        ("business_date", {"column": "at", "type": "io.debezium.time.Year"}, "type is not one of"),
        ("amount_minor", {"column": "amount", "round": True}, "is not a column name or"),
        ("amount_minor", {"scale": 2}, "is not a column name or"),
    ],
)
def test_a_malformed_column_declaration_names_the_setting(field: str, spec: Any, reason: str) -> None:
    """SPEC 10 (v4): every settings value is type and range checked when read, naming the key."""
    with pytest.raises(ValueError, match=reason) as bad:
        parse_column(spec, field, f"debezium.shop.tables.public.orders.columns.{field}")
    assert str(bad.value).startswith(f"debezium.shop.tables.public.orders.columns.{field}")


def test_the_field_schemas_come_from_the_wrapped_image() -> None:
    """SPEC 2.2: a wrapped message names each column's logical type and Decimal scale."""
    amount = {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}, "field": "amount"}
    after = {"type": "struct", "fields": [amount, {"type": "int32", "field": "id"}], "field": "after"}
    schema = {"type": "struct", "fields": [{"type": "struct", "fields": [], "field": "before"}, after]}
    assert row_schemas(schema, "after") == {"amount": FieldSchema(DECIMAL, 2), "id": FieldSchema(None, None)}
    assert row_schemas(schema, "before") == {}
    assert row_schemas(None, "after") == {} and row_schemas({"fields": "x"}, "after") == {}


def change(after: dict[str, Any], op: str = "c") -> dict[str, Any]:
    source = {"connector": "postgresql", "ts_ms": 1790000000000, "db": "shop", "schema": "public"}
    source |= {"table": "orders", "lsn": 5000}
    return {"before": None, "after": after, "source": source, "op": op, "ts_ms": 1790000000001}


MAPPING = {
    "shop": {
        "tables": {
            "public.orders": {
                "entity": "order_line",
                "columns": {
                    "order_id": "id",
                    "amount_minor": {"column": "amount", "scale": 2},
                    "business_date": {"column": "created_at", "time_zone": "Europe/Paris", "type": ZONED},
                    "event_time": {"column": "updated_at", "type": "io.debezium.time.MicroTimestamp"},
                },
                "defaults": {"line_no": 1},
            }
        }
    }
}


def test_a_declared_mapping_decodes_the_image_and_the_event_time_and_round_trips() -> None:
    """SPEC 2.2: the declared columns read through their encodings; the declaration is what the
    settings file said (the Dagster resources pass it on as text)."""
    mapping = debezium.parse_mappings(MAPPING)["shop"]
    assert debezium.parse_mappings(json.loads(json.dumps({"shop": mapping.declaration()}))) == {
        "shop": mapping
    }
    after = {"id": 1, "amount": "10.50", "created_at": "2026-09-20T22:30:00Z", "updated_at": 1789943400000001}
    native = debezium.to_native(change(after), mapping)
    assert native["after"] == {
        "order_id": "1",
        "line_no": 1,
        "amount_minor": 1050,
        "business_date": "2026-09-21",
    }
    assert native["event_time"] == "2026-09-20T22:30:00.000001Z"  # the column, not source.ts_ms
    refused = debezium.adapt([change({**after, "amount": "10.505"})], mapping)
    assert refused == [
        (None, "amount_minor (column 'amount') has more fractional digits than its scale 2: never rounded")
    ]
    missing = debezium.adapt([change({k: v for k, v in after.items() if k != "updated_at"})], mapping)
    assert missing == [(None, "event_time (column 'updated_at') is not in the row")]


EDGE_ZONES = st.sampled_from([None, "UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/New_York"])


@settings(max_examples=300, deadline=None)
@given(
    logical=st.sampled_from([ZONED, "io.debezium.time.Timestamp", "io.debezium.time.NanoTimestamp"]),
    value=st.one_of(
        st.integers(-(10**22), 10**22),
        st.sampled_from(
            [
                "9999-12-31T23:00:00-05:00",
                "0001-01-01T01:00:00+05:00",
                "9999-12-31T23:59:59+00:00",
                "0001-01-01T00:00:00+00:00",
            ]
        ),
        st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    ),
    time_zone=EDGE_ZONES,
    field=st.sampled_from(["business_date", "event_time"]),
)
def test_any_instant_near_the_calendar_edges_decodes_or_is_refused(
    logical: str, value: Any, time_zone: str | None, field: str
) -> None:
    """SPEC 10 (v4): an instant whose day leaves the calendar in the declared zone (the first or
    last hours of the years 1..9999) is refused with the reason, never an OverflowError."""
    column = Column("at", time_zone=time_zone if field == "business_date" else None)
    try:
        decode(field, column, value, FieldSchema(logical))
    except BadValue as bad:
        assert "at" in str(bad)
