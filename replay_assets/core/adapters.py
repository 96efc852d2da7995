"""Adapters: other delivery shapes mapped onto the native event contract, pure.

Each returns native event objects; a line that cannot be mapped is passed through unchanged so
that validation rejects it with its line number and reason (nothing is silently dropped).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from replay_assets.core import strict_json
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.strict_json import shown

SEED000_EVENT_TIME = "1970-01-01T00:00:00Z"  # seed-000 records carry no time; never a cursor
SEED001_STORE = "main"


class Adapter(enum.StrEnum):
    NATIVE = "native"
    PARQUET = "parquet"  # a whole file of the native columns, landed as delivered
    SEED000 = "seed000"  # a whole document (batches and their delivery order), not lines
    SEED001 = "seed001"
    DEBEZIUM = "debezium"  # a whole file (snapshot reads are numbered over it): core/debezium.py


PARQUET_MAGIC = b"PAR1"  # a Parquet file begins and ends with it


def adapter_for(named: str | None, file_name: str, data: bytes) -> Adapter:
    """The adapter that reads a delivered file: the one the operator names, else the one its name
    implies (``*.parquet``: Parquet; anything else: native JSON lines). The name is never trusted
    over the operator or the content: ValueError when the content is not what the adapter reads."""
    implied = Adapter.PARQUET if file_name.endswith(".parquet") else Adapter.NATIVE
    adapter = Adapter(named) if named else implied
    hint = "" if named else " (the default for its name; name the adapter with --adapter)"
    if adapter is Adapter.PARQUET:
        if len(data) < 2 * len(PARQUET_MAGIC) or not (
            data.startswith(PARQUET_MAGIC) and data.endswith(PARQUET_MAGIC)
        ):
            raise ValueError(f"is not a Parquet file, but the parquet adapter reads Parquet{hint}")
    elif data.startswith(PARQUET_MAGIC):
        raise ValueError(f"is a Parquet file, but the {adapter} adapter reads JSON text{hint}")
    return adapter


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
    batches, delivery = _seed000_parts(document)
    if batch_id not in delivery:
        listed = ", ".join(shown(d) for d in delivery[:10])
        raise ValueError(f"batch {shown(batch_id)} is not in its delivery_sequence ({listed})")
    return adapt_seed000(batches, delivery)[batch_id]


def _seed000_parts(document: Any) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The document's batches and its delivery order, each batch id a text naming one batch:
    a second batch of one id would hide the first (never last-wins)."""
    if not (
        isinstance(document, Mapping)
        and isinstance(document.get("batches"), list)
        and isinstance(document.get("delivery_sequence"), list)
    ):
        raise ValueError("not a seed-000 document: it needs batches of records and a delivery_sequence")
    known: set[str] = set()
    for number, batch in enumerate(document["batches"], 1):
        if not (isinstance(batch, Mapping) and isinstance(batch.get("records"), list)):
            raise ValueError(
                f"not a seed-000 document: its batch {number} is not an object with a list of records"
            )
        if not isinstance(batch.get("batch_id"), str):
            raise ValueError(f"not a seed-000 document: its batch {number} has no batch_id text")
        if batch["batch_id"] in known:
            raise ValueError(
                f"it holds batch {shown(batch['batch_id'])} twice (a batch id names one batch; "
                "a duplicate is refused, never last-wins)"
            )
        known.add(batch["batch_id"])
    delivery = document["delivery_sequence"]
    if not all(isinstance(d, str) for d in delivery):
        raise ValueError("not a seed-000 document: its delivery_sequence is not a list of batch id texts")
    if missing := [d for d in delivery if d not in known]:
        listed = ", ".join(shown(d) for d in missing[:3])
        raise ValueError(f"its delivery_sequence names batches it does not hold: {listed}")
    return document["batches"], delivery


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
            obj = strict_json.loads(line)
            # a number the canonical text would round is left for validation to reject, as delivered
            out.append(canonical_json(mapping(strict_json.lossless(obj))))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError, OSError):
            out.append(line)
    return out
