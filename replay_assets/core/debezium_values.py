"""Column values as Debezium encodes them, decoded into the contract's types — pure.

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
- **Dates and instants**: ``core/debezium_time.py``.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from replay_assets.core.debezium_time import TIME_TYPES, BadValue, business_date, instant, known_zone
from replay_assets.core.events import INT_FIELDS, MAX_INT

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
TYPES = frozenset({DECIMAL, VARIABLE_DECIMAL, *TIME_TYPES})
MAX_SCALE = 12  # the contract's integers stop at 1e12: a finer minor unit could hold nothing
MAX_BASE64 = 1400  # 1 KiB of two's-complement bytes: beyond any amount's 1e12, still cheap to read
_DECIMAL_TEXT = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?")
_NUMBER_TEXT = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,4})?")


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
    row = next((f for f in _fields(schema) if f.get("field") == image), None)
    out: dict[str, FieldSchema] = {}
    for column in _fields(row):
        if isinstance(column.get("field"), str):
            name = column.get("name") if isinstance(column.get("name"), str) else None
            parameters = column.get("parameters")
            scale = parameters.get("scale") if isinstance(parameters, dict) else None
            known = isinstance(scale, str) and scale.isascii() and scale.isdigit() and len(scale) < 4
            out[column["field"]] = FieldSchema(name, int(str(scale)) if known else None)
    return out


def _fields(struct: Any) -> list[dict[str, Any]]:
    fields = struct.get("fields") if isinstance(struct, dict) else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []


def decode(field: str, column: Column, value: Any, schema: FieldSchema | None) -> Any:
    """The contract's value of ``field`` from ``column``'s value as delivered. A value without
    an encoding to undo is returned as it is (validation judges it); :class:`BadValue` when an
    encoding is recognised and the value cannot be taken exactly."""
    logical = schema.name if schema is not None and schema.name in TYPES else column.type
    where = f"{field} (column {column.name!r})"
    if value is None or isinstance(value, bool):
        return value
    if field in INT_FIELDS:
        return _integer(value, logical, column, schema, where=where)
    if field == "business_date":
        return business_date(value, logical, column.time_zone, where)
    if field == "event_time":
        moment = instant(value, logical, where)
        return value if moment is None else moment
    return value


def _integer(
    value: Any, logical: str | None, column: Column, schema: FieldSchema | None, *, where: str
) -> Any:
    bytes_scale = schema.scale if schema is not None and schema.scale is not None else column.scale
    amount = exact_amount(value, logical, bytes_scale, where)
    if amount is None and (column.scale is None or not isinstance(value, int)):
        return value  # an integer minor-unit column as it is
    scale = column.scale if column.scale is not None else bytes_scale if logical == DECIMAL else None
    if scale is None:
        raise BadValue(f"{where} is a decimal: declare its scale (the minor unit's digits)")
    return minor_units(decimal.Decimal(value) if amount is None else amount, scale, where)


def exact_amount(
    value: Any, logical: str | None, bytes_scale: int | None, where: str
) -> decimal.Decimal | None:
    """The exact decimal a value encodes (``bytes_scale``: the scale of base64 bytes, from the
    schema or the declaration), or None for an integer, which needs no decoding."""
    if logical == DECIMAL:
        if bytes_scale is None:
            raise BadValue(f"{where} is base64 decimal bytes: declare its scale")
        return _scaled(_unscaled(value, where), bytes_scale)
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
    number = int("".join(map(str, digits))) * 10**shift if len(digits) + shift <= 13 else MAX_INT + 1
    if number > MAX_INT:
        raise BadValue(f"{where} is beyond the contract's 1e12 minor units")
    return number


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
    if scale is not None and (field not in INT_FIELDS or not _scale(scale)):
        raise ValueError(f"{where}.scale is a whole number 0..{MAX_SCALE}, for an integer field only")
    if zone is not None and (field != "business_date" or not known_zone(zone)):
        raise ValueError(f"{where}.time_zone is an IANA time zone name, for business_date only")
    if logical is not None and logical not in TYPES:
        raise ValueError(f"{where}.type is not one of {', '.join(sorted(TYPES))}")
    return Column(spec["column"], scale, zone, logical)


def _scale(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SCALE


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
