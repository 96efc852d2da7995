"""The change-event contract: per-event validation into a flat, typed record.

Pure: values in, values out. A line either becomes an :class:`Event`, a :class:`Rejection`
(a per-event failure) or a :class:`BatchViolation` (the schema gate blocks the batch).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from replay_assets.core import strict_json
from replay_assets.core.errors import RejectReason, Violation

if TYPE_CHECKING:
    from replay_assets.core.upcast import Upcaster

SCHEMA_VERSION = 1
MAX_INT = 10**12
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.|-]{0,79}")
DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")


class Entity(enum.StrEnum):
    ORDER_LINE = "order_line"
    CUSTOMER = "customer"


class Op(enum.StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"


ENVELOPE_REQUIRED = ("event_id", "source_seq", "schema_version", "entity", "op", "key", "event_time")
ENVELOPE_FIELDS = frozenset(ENVELOPE_REQUIRED) | {"version", "after"}
KEY_FIELDS: dict[Entity, tuple[str, ...]] = {
    Entity.ORDER_LINE: ("order_id", "line_no"),
    Entity.CUSTOMER: ("customer_id",),
}
ORDER_IMAGE = (
    "order_id",
    "line_no",
    "store_id",
    "customer_id",
    "product_id",
    "business_date",
    "quantity",
    "amount_minor",
    "cost_minor",
    "status",
)
CUSTOMER_IMAGE = ("customer_id", "name", "segment")
IMAGE_FIELDS: dict[Entity, tuple[str, ...]] = {
    Entity.ORDER_LINE: ORDER_IMAGE,
    Entity.CUSTOMER: CUSTOMER_IMAGE,
}
ID_FIELDS = frozenset({"order_id", "store_id", "customer_id", "product_id"})
INT_FIELDS = frozenset({"line_no", "quantity", "amount_minor", "cost_minor"})
ORDER_STATUSES = frozenset({"active", "cancelled"})
TEXT_LIMIT = 200
TOMBSTONE_IMAGE_SHA = "tombstone"
UNMAPPED = "unmapped"  # the one field of the line an adapter writes for a record it could not map


@dataclass(frozen=True)
class ValidationContext:
    """What validation needs besides the line: the declared slice, the business-date window and
    the upcasters the batch's source declares (``core/upcast.py``)."""

    business_date_start: dt.date
    business_date_end: dt.date  # inclusive: today + tolerance
    seq_low: int | None = None
    seq_high: int | None = None
    max_line_bytes: int = 1 << 20
    upcasters: Mapping[int, Upcaster] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Event:
    """A validated change event; ``image`` is None for a delete."""

    event_id: str
    source_seq: int
    entity: Entity
    op: Op
    key: str
    version: int
    event_time: str
    image: dict[str, Any] | None
    content_sha256: str
    image_sha256: str
    schema_version: int = SCHEMA_VERSION  # as delivered; another version was upcast to 1


@dataclass(frozen=True)
class Rejection:
    reason: RejectReason
    detail: str
    event_id: str | None = None


@dataclass(frozen=True)
class BatchViolation:
    rule: Violation
    detail: str
    event_id: str | None = None


Outcome = Event | Rejection | BatchViolation


def jsonl_lines(text: str) -> list[str]:
    """Split JSON Lines on newlines only (``str.splitlines`` also splits on \x1c-\x1e, \x85 and
    \u2028, which may sit inside a line and would shift every line number after them)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def unmapped_line(adapter: str, record: int, reason: str) -> str:
    """The native line of a source record an adapter could not map: validation rejects it with
    the adapter's own reason (``UNMAPPED_RECORD``), and no reading of it can make an event. The
    record as delivered is kept beside it (``source_records``)."""
    return canonical_json({UNMAPPED: {"adapter": adapter, "record": record, "reason": reason}})


def _unmapped_detail(value: Any) -> str:
    if isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("adapter", "reason")):
        return f"{value['adapter']} record {value.get('record')} could not be mapped: {value['reason']}"
    return "a source record an adapter could not map"


def canonical_json(value: Any) -> str:
    """Sorted-key, separator-free JSON: the canonical text that content hashes are taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_text(entity: Entity, key: dict[str, Any]) -> str:
    """Canonical key string; JSON because ids may contain the ``|`` separator."""
    return canonical_json([key[name] for name in KEY_FIELDS[entity]])


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


class _Reject(Exception):
    def __init__(self, reason: RejectReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _require_fields(obj: dict[str, Any], required: tuple[str, ...], where: str) -> None:
    for name in required:
        if name not in obj:
            raise _Reject(RejectReason.MISSING_FIELD, f"{where} lacks field {name!r}")
    unknown = sorted(set(obj) - set(required))
    if unknown:
        raise _Reject(RejectReason.UNKNOWN_FIELD, f"{where} has unknown field {unknown[0]!r}")


def _check_value(name: str, value: Any, ctx: ValidationContext) -> None:
    if name in ID_FIELDS:
        if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
            raise _Reject(RejectReason.BAD_ID, f"field {name!r} is not a valid id")
    elif name in INT_FIELDS:
        if not is_int(value):
            raise _Reject(RejectReason.BAD_VALUE, f"field {name!r} is not an integer in 0..1e12")
    elif name == "business_date":
        _check_business_date(value, ctx)
    elif name == "status":
        if not isinstance(value, str) or value not in ORDER_STATUSES:
            raise _Reject(RejectReason.BAD_VALUE, "field 'status' is not active|cancelled")
    elif not isinstance(value, str) or not value or len(value) > TEXT_LIMIT:
        raise _Reject(RejectReason.BAD_VALUE, f"field {name!r} is not a text of 1..{TEXT_LIMIT}")


def _check_business_date(value: Any, ctx: ValidationContext) -> None:
    if not isinstance(value, str) or not DATE_PATTERN.fullmatch(value):
        raise _Reject(RejectReason.BAD_VALUE, "field 'business_date' is not YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise _Reject(RejectReason.BAD_VALUE, "field 'business_date' is not a calendar date") from None
    if not ctx.business_date_start <= day <= ctx.business_date_end:
        raise _Reject(
            RejectReason.BUSINESS_DATE_OUT_OF_RANGE,
            f"business_date outside {ctx.business_date_start}..{ctx.business_date_end}",
        )


def _check_event_time(value: Any) -> None:
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() != dt.timedelta(0):
        raise _Reject(RejectReason.BAD_VALUE, "field 'event_time' is not ISO-8601 UTC")


def _check_image(entity: Entity, key: dict[str, Any], after: Any, ctx: ValidationContext) -> None:
    if not isinstance(after, dict):
        raise _Reject(RejectReason.BAD_VALUE, "an upsert needs an 'after' object")
    _require_fields(after, IMAGE_FIELDS[entity], "'after'")
    for name in IMAGE_FIELDS[entity]:
        _check_value(name, after[name], ctx)
    if any(after[name] != key[name] for name in KEY_FIELDS[entity]):
        raise _Reject(RejectReason.KEY_IMAGE_MISMATCH, "'key' differs from the key fields of 'after'")


def _parse(line: str, ctx: ValidationContext) -> Outcome:
    try:
        size = len(line.encode("utf-8"))
    except UnicodeEncodeError:  # undecodable bytes kept as surrogates: never repaired
        raise _Reject(RejectReason.INVALID_UTF8, "line is not valid UTF-8") from None
    if size > ctx.max_line_bytes:
        raise _Reject(RejectReason.LINE_TOO_LONG, f"line exceeds {ctx.max_line_bytes} bytes")
    try:
        obj = strict_json.loads(line)
    except strict_json.DuplicateKey as duplicate:
        raise _Reject(RejectReason.DUPLICATE_KEY, str(duplicate)) from None
    except (ValueError, RecursionError):
        raise _Reject(RejectReason.MALFORMED_JSON, "line is not valid JSON") from None
    if not isinstance(obj, dict):
        raise _Reject(RejectReason.MALFORMED_JSON, "line is not a JSON object")
    if set(obj) == {UNMAPPED}:
        raise _Reject(RejectReason.UNMAPPED_RECORD, _unmapped_detail(obj[UNMAPPED]))
    version = obj.get("schema_version", SCHEMA_VERSION)
    if type(version) is int and version in ctx.upcasters:  # True == 1 and 1.0 == 1 in Python
        try:
            upcast = ctx.upcasters[version].apply(obj)
        except ValueError as bad:
            raise _Reject(RejectReason.UPCAST_FAILED, str(bad)) from None
        event = _parse_envelope(upcast, ctx)
        return dataclasses.replace(event, schema_version=version)
    if type(version) is not int or version != SCHEMA_VERSION:
        event_id = obj.get("event_id") if isinstance(obj.get("event_id"), str) else None
        return BatchViolation(
            Violation.UNSUPPORTED_SCHEMA_VERSION,
            f"unsupported schema_version at source_seq={_seq_text(obj.get('source_seq'))}",
            event_id,
        )
    return _parse_envelope(obj, ctx)


def _seq_text(value: Any) -> str:
    return str(value) if is_int(value) else "?"


def _parse_envelope(obj: dict[str, Any], ctx: ValidationContext) -> Event:
    for name in ENVELOPE_REQUIRED:
        if name not in obj:
            raise _Reject(RejectReason.MISSING_FIELD, f"event lacks field {name!r}")
    unknown = sorted(set(obj) - ENVELOPE_FIELDS)
    if unknown:
        raise _Reject(RejectReason.UNKNOWN_FIELD, f"event has unknown field {unknown[0]!r}")
    if not isinstance(obj["event_id"], str) or not ID_PATTERN.fullmatch(obj["event_id"]):
        raise _Reject(RejectReason.BAD_ID, "field 'event_id' is not a valid id")
    if not is_int(obj["source_seq"]):
        raise _Reject(RejectReason.BAD_VALUE, "field 'source_seq' is not an integer in 0..1e12")
    version = obj.get("version", obj["source_seq"])
    if not is_int(version):
        raise _Reject(RejectReason.BAD_VALUE, "field 'version' is not an integer in 0..1e12")
    if not isinstance(obj["entity"], str) or obj["entity"] not in set(Entity):
        raise _Reject(RejectReason.BAD_VALUE, "field 'entity' is not order_line|customer")
    if not isinstance(obj["op"], str) or obj["op"] not in set(Op):
        raise _Reject(RejectReason.BAD_VALUE, "field 'op' is not upsert|delete")
    _check_event_time(obj["event_time"])
    entity, op, key = Entity(obj["entity"]), Op(obj["op"]), obj["key"]
    if not isinstance(key, dict):
        raise _Reject(RejectReason.BAD_VALUE, "field 'key' is not an object")
    _require_fields(key, KEY_FIELDS[entity], "'key'")
    for name in KEY_FIELDS[entity]:
        _check_value(name, key[name], ctx)
    seq = obj["source_seq"]
    if (ctx.seq_low is not None and seq < ctx.seq_low) or (ctx.seq_high is not None and seq > ctx.seq_high):
        raise _Reject(RejectReason.OUTSIDE_DECLARED_SLICE, "source_seq outside the manifest's slice")
    after = obj.get("after")
    if op is Op.UPSERT:
        _check_image(entity, key, after, ctx)
    elif after is not None:
        raise _Reject(RejectReason.BAD_VALUE, "a delete carries no 'after' image")
    return _build_event(
        obj, entity, op=op, key=key, version=version, image=after if op is Op.UPSERT else None
    )


def _build_event(
    obj: dict[str, Any],
    entity: Entity,
    op: Op,
    key: dict[str, Any],
    version: int,
    image: dict[str, Any] | None,
) -> Event:
    content = {
        "event_id": obj["event_id"],
        "source_seq": obj["source_seq"],
        "schema_version": SCHEMA_VERSION,
        "entity": str(entity),
        "op": str(op),
        "key": key,
        "version": version,
        "event_time": obj["event_time"],
        "after": image,
    }
    image_sha = TOMBSTONE_IMAGE_SHA if image is None else sha256_text(canonical_json(image))
    return Event(
        event_id=obj["event_id"],
        source_seq=obj["source_seq"],
        entity=entity,
        op=op,
        key=key_text(entity, key),
        version=version,
        event_time=obj["event_time"],
        image=image,
        content_sha256=sha256_text(canonical_json(content)),
        image_sha256=image_sha,
    )


def parse_event(line: str, ctx: ValidationContext) -> Outcome:
    """Validate one JSONL line. Total: never raises; every failure is a value naming the rule."""
    try:
        return _parse(line, ctx)
    except _Reject as reject:
        return Rejection(reject.reason, reject.detail, _event_id_if_readable(line))
    except UnicodeEncodeError:  # a lone surrogate escape such as "\ud800"
        return Rejection(RejectReason.MALFORMED_JSON, "line has an invalid unicode escape")


def _event_id_if_readable(line: str) -> str | None:
    try:
        obj = strict_json.loads(line)  # a duplicated key makes even the event id ambiguous
        event_id = obj.get("event_id") if isinstance(obj, dict) else None
        if isinstance(event_id, str):
            event_id.encode("utf-8")
    except (ValueError, RecursionError, UnicodeEncodeError):
        return None
    return event_id if isinstance(event_id, str) and ID_PATTERN.fullmatch(event_id) else None
