"""Adapters: other delivery shapes mapped onto the native event contract (SPEC 2.2), pure.

Each returns native event objects; a line that cannot be mapped is passed through unchanged so
that validation rejects it with its line number and reason (nothing is silently dropped).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from replay_assets.core.events import canonical_json, sha256_text

SEED000_EVENT_TIME = "1970-01-01T00:00:00Z"  # seed-000 records carry no time; never a cursor
SEED001_STORE = "main"


class Adapter(enum.StrEnum):
    NATIVE = "native"
    SEED000 = "seed000"  # a whole document (batches and their delivery order), not lines
    SEED001 = "seed001"
    DEBEZIUM = "debezium"  # a whole file (snapshot reads are numbered over it): core/debezium.py


def adapt_seed000(batches: Sequence[Mapping[str, Any]], delivery: Sequence[str]) -> dict[str, list[str]]:
    """Seed-000 batch records -> native JSONL lines per batch id.

    Pinned defaults: line_no 1, quantity 1, cost 0, customer and product "unknown",
    event_id = sha256(canonical record)[:32], version = source_version, source_seq = the ordinal
    (from 1) of the record's first appearance in the delivery order, so a re-sent record is the
    same source change and dedupes.
    """
    by_id = {b["batch_id"]: b for b in batches}
    first_seen: dict[str, int] = {}
    ordinal = 0
    out: dict[str, list[str]] = {}
    for batch_id in delivery:
        lines = []
        for record in by_id[batch_id]["records"]:
            ordinal += 1
            text = canonical_json(record)
            seq = first_seen.setdefault(text, ordinal)
            try:
                lines.append(canonical_json(_seed000_event(record, text, seq)))
            except (KeyError, TypeError, AttributeError):
                lines.append(text)  # validation rejects it with the reason, and keeps it
        out.setdefault(batch_id, lines)
    return out


def seed000_batch(document: Any, batch_id: str) -> list[str]:
    """One batch of a seed-000 document (``batches`` of ``{batch_id, records}`` and the
    ``delivery_sequence`` of batch ids) as native lines, numbered over the whole delivery order
    so a record the document re-sends is the same source change. ValueError says what is wrong."""
    if not (
        isinstance(document, Mapping)
        and isinstance(document.get("batches"), list)
        and isinstance(document.get("delivery_sequence"), list)
        and all(isinstance(b, Mapping) and isinstance(b.get("records"), list) for b in document["batches"])
    ):
        raise ValueError("not a seed-000 document: it needs batches of records and a delivery_sequence")
    delivery = [str(d) for d in document["delivery_sequence"]]
    known = {str(b.get("batch_id")) for b in document["batches"]}
    if missing := [d for d in delivery if d not in known]:
        raise ValueError(f"its delivery_sequence names batches it does not hold: {missing[:3]}")
    if batch_id not in delivery:
        raise ValueError(f"batch {batch_id!r} is not in its delivery_sequence {delivery[:10]}")
    return adapt_seed000(document["batches"], delivery)[batch_id]


def _seed000_event(record: Mapping[str, Any], text: str, seq: int) -> dict[str, Any]:
    deleted = record["operation"] == "delete"
    after = (
        None
        if deleted
        else {
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
    )
    return {
        "event_id": sha256_text(text)[:32],
        "source_seq": seq,
        "schema_version": 1,
        "entity": "order_line",
        "op": "delete" if deleted else "upsert",
        "key": {"order_id": record["order_id"], "line_no": 1},
        "version": record["source_version"],
        "event_time": SEED000_EVENT_TIME,
        "after": after,
    }


SEED001_OPS = {"I": "upsert", "U": "upsert", "D": "delete"}
SEED001_STATUS = {"paid": "active"}
SEED001_RENAMES = {"extended_amount": "amount_minor", "extended_cost": "cost_minor"}


def adapt_seed001(event: Mapping[str, Any]) -> dict[str, Any]:
    """Seed-001 CDC event -> native event. ``before``, ``event_ts`` and ``source_updated_at`` are
    envelope fields; business_date is the UTC date of ``event_ts``; store ``main``."""
    entity = "order_line" if event["entity"] == "sale" else event["entity"]
    out = {k: v for k, v in event.items() if k not in {"before", "event_ts", "source_updated_at"}}
    out.update(
        entity=entity, op=SEED001_OPS.get(event["op"], event["op"]), event_time=_utc(event["event_ts"])
    )
    if entity == "order_line":
        order_id, line_no = str(event["key"]).rsplit("|", 1)
        out["key"] = {"order_id": order_id, "line_no": int(line_no)}
    else:
        out["key"] = {"customer_id": event["key"]}
    after = event.get("after")
    if out["op"] == "upsert" and isinstance(after, dict) and entity == "order_line":
        image = {SEED001_RENAMES.get(k, k): v for k, v in after.items()}
        status = image.get("status")
        if isinstance(status, str):
            image["status"] = SEED001_STATUS.get(status, status)
        image.setdefault("store_id", SEED001_STORE)
        image.setdefault("business_date", _utc_day(event["event_ts"]))
        out["after"] = image
    elif out["op"] == "delete":
        out["after"] = None
    return out


def _utc(instant: str) -> str:
    """The instant in UTC with a ``Z``; a UTC input keeps its own text (the content hash)."""
    moment = dt.datetime.fromisoformat(instant)
    if moment.utcoffset() == dt.timedelta(0):
        return instant
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _utc_day(instant: str) -> str:
    return dt.datetime.fromisoformat(instant).astimezone(dt.UTC).date().isoformat()


ADAPTERS: dict[Adapter, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    Adapter.SEED001: adapt_seed001,
}


def adapt_lines(adapter: Adapter, lines: Iterable[str]) -> list[str]:
    """Map each line; a line the adapter cannot read is kept as-is for validation to reject.
    Line adapters only: seed-000 documents and Debezium files have their own entry points."""
    if adapter is Adapter.NATIVE:
        return list(lines)
    mapping = ADAPTERS[adapter]
    out = []
    for line in lines:
        try:
            obj = json.loads(line)
            out.append(canonical_json(mapping(obj)))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError, OSError):
            out.append(line)
    return out
