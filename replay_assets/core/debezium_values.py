"""Column values as Debezium encodes them, decoded into the contract's types (SPEC 2.2) — pure.

- **Which encoding.** The wrapped message's field schema names the logical type (``name``:
  ``org.apache.kafka.connect.data.Decimal``, ``io.debezium.time.MicroTimestamp``, ...); a bare
  message has none, and the mapping's ``type`` declared for the column stands in for it. Without
  either, a JSON string is decimal text (``decimal.handling.mode=string``), a JSON number with a
  fraction or an exponent is a double (``double``), and an integer is taken as it is.
- **Decimals become minor units exactly**, never through a float: ``precise`` (base64 big-endian
  two's-complement bytes; the scale from the schema's ``parameters.scale``, or the declared
  ``scale`` when bare), ``io.debezium.data.VariableScaleDecimal`` (``{scale, value}``), decimal
  text, and a double read from its JSON text. The minor units are the amount times 10**scale,
  where scale is the declared one (else the Decimal schema's): more fractional digits than that,
  a negative amount or one beyond 1e12 is refused with a reason naming the field and the column.
- **Dates and instants.** ``io.debezium.time.Date`` and Connect's ``Date`` (days since 1970),
  ``Timestamp`` (ms), ``MicroTimestamp``, ``NanoTimestamp``, Connect's ``Timestamp`` (ms) and
  ``ZonedTimestamp`` (ISO text with an offset). The epoch encodings are read as UTC (Debezium
  writes a column without a time zone as its wall clock read as UTC); a timestamp's business date
  is its calendar day in the declared ``time_zone`` (an IANA name; UTC when none is declared).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
DAYS = frozenset({"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"})
EPOCH_DIGITS = {  # fractional digits of a second each epoch encoding counts in
    "io.debezium.time.Timestamp": 3,
    "org.apache.kafka.connect.data.Timestamp": 3,
    "io.debezium.time.MicroTimestamp": 6,
    "io.debezium.time.NanoTimestamp": 9,
}
ZONED = "io.debezium.time.ZonedTimestamp"
TYPES = frozenset({DECIMAL, VARIABLE_DECIMAL, ZONED, *DAYS, *EPOCH_DIGITS})
MAX_SCALE = 12  # the contract's integers stop at 1e12: a finer minor unit could hold nothing
MAX_MINOR = 10**12
MAX_BASE64 = 1400  # 1 KiB of two's-complement bytes: beyond any amount's 1e12, still cheap to read
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DECIMAL_TEXT = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?")
_NUMBER_TEXT = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,4})?")
_ZONE = re.compile(r"[A-Za-z0-9_+-]{1,40}(/[A-Za-z0-9_+-]{1,40}){0,3}")


class BadValue(ValueError):
    """A column value the contract cannot take as it is encoded; the message names the field,
    the column and the rule (never the value)."""


class JsonNumber(float):
    """A JSON number with a fraction or an exponent that keeps its text: a double's exact
    decimal value is what the producer wrote, not the nearest binary float."""

    text: str

    def __new__(cls, text: str) -> JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number


@dataclass(frozen=True)
class Column:
    """A contract field's source column and how its values are read: ``scale``, the fractional
    digits of the contract's minor unit; ``time_zone``, where a timestamp's business day is
    counted; ``type``, the logical type of a bare message's column (a wrapped one names its own)."""

    name: str
    scale: int | None = None
    time_zone: str | None = None
    type: str | None = None

    def declaration(self) -> str | dict[str, Any]:
        options = {"scale": self.scale, "time_zone": self.time_zone, "type": self.type}
        declared = {k: v for k, v in options.items() if v is not None}
        return {"column": self.name, **declared} if declared else self.name


@dataclass(frozen=True)
class FieldSchema:
    """What a wrapped message's schema says of one column: its logical type and Decimal scale."""

    name: str | None = None
    scale: int | None = None


def wrapper_schema(message: Any) -> Any:
    """The ``schema`` of a message the JSON converter wrapped (``{schema, payload}``), else None."""
    return message["schema"] if isinstance(message, dict) and set(message) == {"schema", "payload"} else None


def row_schemas(schema: Any, image: str) -> dict[str, FieldSchema]:
    """The field schemas of the ``image`` (``after`` or ``before``) struct of a wrapped message's
    ``schema``, by column; empty for a bare message or a schema that does not describe them."""
    fields = schema.get("fields") if isinstance(schema, dict) else None
    row = next((f for f in fields or [] if isinstance(f, dict) and f.get("field") == image), None)
    out: dict[str, FieldSchema] = {}
    for column in row.get("fields") or [] if isinstance(row, dict) else []:
        if isinstance(column, dict) and isinstance(column.get("field"), str):
            name = column.get("name") if isinstance(column.get("name"), str) else None
            parameters = column.get("parameters") if isinstance(column.get("parameters"), dict) else {}
            scale = parameters.get("scale")
            known = isinstance(scale, str) and scale.isascii() and scale.isdigit() and len(scale) < 4
            out[column["field"]] = FieldSchema(name, int(scale) if known else None)
    return out


def decode(field: str, column: Column, value: Any, schema: FieldSchema | None) -> Any:
    """The contract's value of ``field`` from ``column``'s value as delivered. A value without
    an encoding to undo is returned as it is (validation judges it); :class:`BadValue` when an
    encoding is recognised and the value cannot be taken exactly."""
    logical = schema.name if schema is not None and schema.name in TYPES else column.type
    where = f"{field} (column {column.name!r})"
    if value is None or isinstance(value, bool):
        return value
    if field in {"line_no", "quantity", "amount_minor", "cost_minor"}:
        amount = exact_amount(value, logical, schema, column, where)
        if amount is None:
            return value
        scale = column.scale if column.scale is not None else schema.scale if schema else None
        if scale is None:
            raise BadValue(f"{where} is a decimal: declare its scale (the minor unit's digits)")
        return minor_units(amount, scale, where)
    if field == "business_date":
        return business_date(value, logical, column.time_zone, where)
    if field == "event_time":
        moment = instant(value, logical, where)
        return value if moment is None else moment
    return value


def exact_amount(
    value: Any, logical: str | None, schema: FieldSchema | None, column: Column, where: str
) -> decimal.Decimal | None:
    """The exact decimal a value encodes, or None for a plain integer without a declared scale."""
    if logical == DECIMAL:
        scale = schema.scale if schema is not None and schema.scale is not None else column.scale
        if scale is None:
            raise BadValue(f"{where} is base64 decimal bytes: declare its scale")
        return _scaled(_unscaled(value, where), scale)
    if logical == VARIABLE_DECIMAL:
        if not isinstance(value, dict) or set(value) != {"scale", "value"} or not _small(value["scale"]):
            raise BadValue(f"{where} is not a VariableScaleDecimal {{scale, value}}")
        return _scaled(_unscaled(value["value"], where), value["scale"])
    if isinstance(value, str):
        if not _DECIMAL_TEXT.fullmatch(value):
            raise BadValue(f"{where} is not decimal text (digits, an optional sign and point)")
        return decimal.Decimal(value)
    if isinstance(value, float):
        text = value.text if isinstance(value, JsonNumber) else repr(value)
        if not _NUMBER_TEXT.fullmatch(text):
            raise BadValue(f"{where} is not a finite number")
        return decimal.Decimal(text)
    if isinstance(value, int) and column.scale is not None:
        return decimal.Decimal(value)
    return None


def minor_units(amount: decimal.Decimal, scale: int, where: str) -> int:
    """``amount`` times 10**scale as an integer in the contract's 0..1e12, never rounded."""
    sign, found, exponent = amount.as_tuple()
    assert isinstance(exponent, int)  # finite: the readers above make only finite decimals
    digits, shift = list(found), exponent + scale
    while shift < 0 and len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        shift += 1
    if digits == [0]:
        return 0
    if shift < 0:
        raise BadValue(f"{where} has more fractional digits than its scale {scale}: never rounded")
    if sign:
        raise BadValue(f"{where} is negative: the contract's amounts are 0..1e12")
    number = int("".join(map(str, digits))) * 10**shift if len(digits) + shift <= 13 else MAX_MINOR + 1
    if number > MAX_MINOR:
        raise BadValue(f"{where} is beyond the contract's 1e12 minor units")
    return number


def business_date(value: Any, logical: str | None, time_zone: str | None, where: str) -> Any:
    """A date as YYYY-MM-DD: days since 1970, or a timestamp's day in ``time_zone`` (UTC)."""
    if logical in DAYS or (logical is None and isinstance(value, int)):
        if not isinstance(value, int):
            raise BadValue(f"{where} is not a whole number of days since 1970-01-01")
        try:
            return (EPOCH + dt.timedelta(days=value)).date().isoformat()
        except OverflowError:
            raise BadValue(f"{where} is a day outside the calendar") from None
    if logical in EPOCH_DIGITS or logical == ZONED:
        moment = _moment(value, logical, where)
        zone = zoneinfo.ZoneInfo(time_zone) if time_zone else dt.UTC
        return moment.astimezone(zone).date().isoformat()
    return value


def instant(value: Any, logical: str | None, where: str) -> str | None:
    """An ISO-8601 UTC instant (``...Z``) from a timestamp encoding, None without one. An epoch
    count keeps all its digits (a nanosecond one too)."""
    if logical in EPOCH_DIGITS:
        digits = EPOCH_DIGITS[logical]
        moment = _moment(value, logical, where)
        fraction = value % 10**digits
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:0{digits}d}Z"
    if logical == ZONED:
        moment = _moment(value, logical, where).astimezone(dt.UTC)
        return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return None


def _moment(value: Any, logical: str | None, where: str) -> dt.datetime:
    if logical == ZONED:
        try:
            moment = dt.datetime.fromisoformat(value) if isinstance(value, str) and len(value) < 64 else None
        except ValueError:
            moment = None
        if moment is None or moment.utcoffset() is None:
            raise BadValue(f"{where} is not an ISO-8601 timestamp with an offset (ZonedTimestamp)")
        return moment
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadValue(f"{where} is not a whole count since 1970 ({logical})")
    seconds = value // 10 ** EPOCH_DIGITS[str(logical)]
    try:
        return EPOCH + dt.timedelta(seconds=seconds)
    except OverflowError:
        raise BadValue(f"{where} is an instant outside the years 1..9999") from None


def _scaled(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(f"{unscaled}E-{scale}")  # exact: a Decimal from text is never rounded


def _unscaled(value: Any, where: str) -> int:
    try:
        raw = (
            base64.b64decode(value, validate=True)
            if isinstance(value, str) and len(value) <= MAX_BASE64
            else b""
        )
    except (binascii.Error, ValueError):
        raw = b""
    if not raw:
        raise BadValue(f"{where} is not base64 decimal bytes (decimal.handling.mode=precise)")
    return int.from_bytes(raw, "big", signed=True)


def _small(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 40


def parse_column(spec: Any, field: str, where: str) -> Column:
    """A column declaration: its name, or ``{column, scale, time_zone, type}``. ValueError names
    the setting and the rule."""
    if isinstance(spec, str):
        return Column(spec)
    if (
        not isinstance(spec, dict)
        or "column" not in spec
        or set(spec) - {"column", "scale", "time_zone", "type"}
    ):
        raise ValueError(f"{where} is not a column name or {{column, scale, time_zone, type}}")
    scale, zone, logical = spec.get("scale"), spec.get("time_zone"), spec.get("type")
    if scale is not None and (
        field not in {"line_no", "quantity", "amount_minor", "cost_minor"} or not _scale(scale)
    ):
        raise ValueError(f"{where}.scale is a whole number 0..{MAX_SCALE}, for an integer field only")
    if zone is not None and (field != "business_date" or not _known_zone(zone)):
        raise ValueError(f"{where}.time_zone is an IANA time zone name, for business_date only")
    if logical is not None and logical not in TYPES:
        raise ValueError(f"{where}.type is not one of {', '.join(sorted(TYPES))}")
    return Column(spec["column"], scale, zone, logical)


def _scale(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SCALE


def _known_zone(name: Any) -> bool:
    if not isinstance(name, str) or not _ZONE.fullmatch(name) or ".." in name:
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def decoded_image(
    entity_fields: tuple[str, ...],
    columns: Mapping[str, Column],
    row: Mapping[str, Any],
    schemas: Mapping[str, FieldSchema],
) -> dict[str, Any]:
    """The contract fields found in ``row``, each decoded from its column's encoding."""
    out: dict[str, Any] = {}
    for name in entity_fields:
        column = columns.get(name, Column(name))
        if column.name in row:
            out[name] = decode(name, column, row[column.name], schemas.get(column.name))
    return out
