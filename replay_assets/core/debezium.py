"""Debezium change events mapped onto the native contract — pure.

Takes the envelope as Debezium writes it through Kafka Connect's JSON converter: with the
``schema``/``payload`` wrapper (``schemas.enable=true``, the default) or bare; ``op`` ``c``/``u``/
``r`` (a snapshot read) as upserts and ``d`` as a delete (its key from ``before``); a Kafka
tombstone (a null value after a delete) carries nothing and maps to no event.

- **Tables** are known by their full name only: ``schema.table``, or ``db.table`` for MySQL,
  which has no schemas. Without a declaration only the default schema ``public`` maps.
- **Position.** PostgreSQL: ``source.lsn`` (or a generic ``source.seq``). MySQL: the binlog
  coordinates, ``file_no * 2**32 + pos + row`` (``row`` numbers the rows of one multi-row
  binlog event; they lie inside that event's bytes, so the sum is unique and ordered). The
  source's declared ``position_offset`` is subtracted (the contract caps integers at 1e12). A
  streamed change's position is its ``source_seq`` and ``version``. A position the contract
  cannot hold after the offset refuses the whole file (:class:`PositionOutOfRange`): rejecting
  records the source sent correctly would certify a date without them.
- **Snapshot reads** share the snapshot's position P. Their ``version`` is P (the state as of P:
  newer than every change before it, older than every change after); their ``source_seq`` —
  unique per source in the contract — numbers them in delivery order just below P
  (``P - n + k`` for the k-th of n reads at P in the file). The limits:
  docs/decisions/0008-debezium-positions-and-time.md.
- **Time.** ``source.ts_ms`` (when the change was committed at the source) is ``event_time``;
  the envelope's ``ts_ms`` (when the connector processed it) only when the source has none — it
  changes when a connector re-sends after a restart, which would make a redelivery a conflict.
- **Columns.** A mapping declared per source names, per table, the entity, the source column of
  each contract field (the same name when not listed) and defaults for fields the table lacks;
  other columns are not part of the contract and are left out. A ``business_date`` given as an
  integer is Debezium's ``io.debezium.time.Date`` (days since 1970-01-01); an integer id column
  (``order_id``, ``customer_id``, ...) becomes its decimal text, the contract's id type.
- **Evidence.** :func:`record_of` gives what the native event cannot carry: the table, the op,
  the position fields and the ``transaction`` block (id, total and per-table order).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from replay_assets.core import strict_json
from replay_assets.core.debezium_values import JsonNumber, row_schemas, wrapper_schema
from replay_assets.core.events import KEY_FIELDS, MAX_INT, SCHEMA_VERSION, canonical_json, unmapped_line

# the mapping and its declaration live in source_tables.py; these names are read from here too
from replay_assets.core.source_tables import DEFAULT_MAPPING as DEFAULT_MAPPING
from replay_assets.core.source_tables import SourceMapping as SourceMapping
from replay_assets.core.source_tables import Unmappable as Unmappable
from replay_assets.core.source_tables import parse_mappings as parse_mappings

OPS = {"c": "upsert", "u": "upsert", "r": "upsert", "d": "delete"}
BINLOG_STRIDE = 2**32
EPOCH_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_BINLOG_NUMBER = re.compile(r".*?([0-9]+)$")
SOURCE_EVIDENCE = ("connector", "name", "db", "schema", "table", "lsn", "txId", "file", "pos", "row", "gtid")


class PositionOutOfRange(Exception):
    """A record's position that the contract cannot number after the source's
    ``position_offset`` (below 0 or beyond 1e12): the file is refused whole, never landed
    with that record rejected. ``record`` is its number in the file."""

    def __init__(self, record: int, reason: str) -> None:
        super().__init__(f"record {record}: {reason}")
        self.record = record
        self.reason = reason


class _OutOfRange(Exception):
    """A position the contract cannot number; :func:`adapt` names the record."""


def envelope(message: Any) -> dict[str, Any] | None:
    """The change event of one converter message: unwrapped from ``{schema, payload}``; None for
    a Kafka tombstone (a null value, bare or wrapped)."""
    if message is None:
        return None
    if isinstance(message, dict) and set(message) == {"schema", "payload"}:
        message = message["payload"]
        if message is None:
            return None
    if not isinstance(message, dict) or not isinstance(message.get("source"), dict):
        raise Unmappable("not a Debezium change event (an object with op, source, before/after)")
    return message


def position(source: Mapping[str, Any]) -> int:
    """The change's place in the source's log: the PostgreSQL LSN or the MySQL binlog coordinates.
    ``_OutOfRange`` when there is none the contract can number: a mapped table's change without
    its place in the log cannot be ordered, so its file is refused, never landed without it."""
    for name in ("lsn", "seq"):  # PostgreSQL's LSN; ``seq``, the contract's generic position
        if _is_count(source.get(name)):
            return int(source[name])
    file, pos, row = source.get("file"), source.get("pos"), source.get("row", 0)
    if isinstance(file, str) and _is_count(pos) and _is_count(row):
        number = _BINLOG_NUMBER.fullmatch(file)
        if number is None:
            raise _OutOfRange(f"binlog file {strict_json.shown(file)} has no number")
        if pos + row >= BINLOG_STRIDE:
            raise _OutOfRange("binlog position beyond 2**32 within one file")
        return int(number.group(1)) * BINLOG_STRIDE + pos + row
    raise _OutOfRange("source has no position (source.lsn, source.seq, or source.file and source.pos)")


def to_native(
    event: Mapping[str, Any], mapping: SourceMapping, seq: int | None = None, schema: Any = None
) -> dict[str, Any]:
    """One change event as a native event. ``seq`` is the ``source_seq`` of a snapshot read (given
    by :func:`adapt`, which numbers the reads of one position); a streamed change uses its position.
    ``schema``: a wrapped message's own schema, which names its columns' encodings.
    Raises :class:`Unmappable` for this record, ``_OutOfRange`` (:func:`numbered`) for the file."""
    op = event.get("op")
    if op not in OPS:
        raise Unmappable(f"op {_shown(op)} is not one of c, u, d, r")
    source = event["source"]
    name, table = mapping.table(source)
    at = numbered(position(source), seq, mapping.position_offset)
    row = event.get("before") if op == "d" else event.get("after")
    if not isinstance(row, dict):
        raise Unmappable(f"op {_shown(op)} without its {'before' if op == 'd' else 'after'} image")
    schemas = row_schemas(schema, "before" if op == "d" else "after")
    image = table.image(row, schemas)
    native: dict[str, Any] = {
        "event_id": f"{name}-{at if seq is None else f's{at}-{seq}'}",
        "source_seq": at if seq is None else seq,
        "schema_version": SCHEMA_VERSION,
        "entity": str(table.entity),
        "op": OPS[op],
        "key": {k: image.get(k) for k in KEY_FIELDS[table.entity]},
        "version": at,
        "event_time": table.event_time(row, schemas) or _event_time(event),
    }
    if OPS[op] == "upsert":
        native["after"] = image
    return native


def numbered(at: int, seq: int | None, offset: int) -> int:
    """The contract's number of a change at source position ``at`` (``seq``: a snapshot read's
    number, from :func:`adapt`): ``at - offset``. ``_OutOfRange`` when it, or the read's number,
    falls outside the contract's 0..1e12."""
    based = at - offset
    if based < 0:
        raise _OutOfRange(f"position {at} is below the source's position_offset {offset}")
    if based > MAX_INT:
        raise _OutOfRange(f"position {at} is beyond 1e12 after the source's position_offset {offset}")
    if seq is not None and seq < 0:
        raise _OutOfRange(
            f"the snapshot reads at position {at} are numbered just below it, down to {seq}: "
            f"below 0 after the source's position_offset {offset}"
        )
    return based


def adapt(messages: Sequence[Any], mapping: SourceMapping) -> list[tuple[dict[str, Any] | None, str | None]]:
    """Each message as (native event or None, why not): None and no reason for a Kafka tombstone,
    None and the reason for a record that cannot be mapped. The snapshot reads of one position
    are numbered in delivery order just below it. Raises :class:`PositionOutOfRange` (the
    message's number from 1) for a position the contract cannot number."""
    parsed: list[dict[str, Any] | Unmappable | None] = []
    for message in messages:
        try:
            parsed.append(envelope(message))
        except Unmappable as bad:
            parsed.append(bad)
    reads: Counter[int | None] = Counter()
    for found in parsed:
        if isinstance(found, dict) and found.get("op") == "r":
            reads[_snapshot_at(found, mapping)] += 1
    seen: Counter[int | None] = Counter()
    out: list[tuple[dict[str, Any] | None, str | None]] = []
    for number, (message, found) in enumerate(zip(messages, parsed, strict=True), 1):
        if found is None or isinstance(found, Unmappable):
            out.append((None, None if found is None else str(found)))
            continue
        try:
            seq = None
            if found.get("op") == "r" and (at := _snapshot_at(found, mapping)) is not None:
                seen[at] += 1
                seq = at - reads[at] + seen[at]
            out.append((to_native(found, mapping, seq, wrapper_schema(message)), None))
        except Unmappable as bad:
            out.append((None, str(bad)))
        except _OutOfRange as refused:
            raise PositionOutOfRange(number, str(refused)) from None
        except (KeyError, TypeError, AttributeError, ValueError, ArithmeticError) as bad:
            # whatever a record holds, it is rejected with a reason: the file's other records land
            out.append((None, f"malformed change event ({type(bad).__name__})"))
    return out


def adapt_file(
    lines: Sequence[str], mapping: SourceMapping, cut: Mapping[int, str] | None = None
) -> tuple[list[str], list[str]]:
    """A delivered file of converter messages (one JSON value a line) as native lines and source
    records: one record per non-blank line with the native line it became (for a record that
    cannot be mapped, a line validation rejects with the reason: ``unmapped_line``; a tombstone
    becomes none), the reason, the evidence (:func:`record_of`) and the line as delivered.
    ``cut`` gives, by line number, why reading kept only part of a line (it is too long).
    Raises :class:`PositionOutOfRange`, naming the record, when a position cannot be numbered."""
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    messages: list[Any] = []
    unreadable: dict[int, str] = dict(cut or {})
    for n, line in numbered:
        if n in unreadable:
            messages.append(None)
            continue
        try:
            messages.append(strict_json.loads(line, parse_float=JsonNumber))  # a double's own text
        except strict_json.DuplicateKey as duplicate:
            messages.append(None)
            unreadable[n] = f"not readable: {duplicate}"
        except (ValueError, RecursionError):
            messages.append(None)
            unreadable[n] = "not a JSON value"
    try:
        mapped = adapt(messages, mapping)
    except PositionOutOfRange as refused:
        raise PositionOutOfRange(numbered[refused.record - 1][0], refused.reason) from None
    native: list[str] = []
    records: list[str] = []
    for (n, line), message, (event, reason) in zip(numbered, messages, mapped, strict=True):
        reason = unreadable.get(n, reason)
        if event is not None:
            native.append(canonical_json(event))
        elif reason is not None:
            native.append(unmapped_line("debezium", n, reason))
        found = _envelope_or_none(message) if n not in unreadable else None
        record = {
            "record": n,
            "line": len(native) if event is not None or reason is not None else None,
            "adapter": "debezium",
            "reason": reason,
            "evidence": record_of(found),
            "envelope": line,
        }
        records.append(canonical_json(record))
    return native, records


def _envelope_or_none(message: Any) -> dict[str, Any] | None:
    try:
        return envelope(message)
    except Unmappable:
        return None


def _snapshot_at(event: Mapping[str, Any], mapping: SourceMapping) -> int | None:
    """A snapshot read's position after the offset, or None when it has none (:func:`to_native`
    says why)."""
    try:
        return position(event["source"]) - mapping.position_offset
    except (Unmappable, _OutOfRange, KeyError, TypeError):
        return None


def record_of(event: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the native event cannot carry, kept as evidence: op, the source's position fields,
    its snapshot flag and commit time, and the transaction block."""
    if event is None:
        return {"op": None}
    source = event.get("source") if isinstance(event.get("source"), dict) else {}
    assert isinstance(source, dict)
    transaction = event.get("transaction") if isinstance(event.get("transaction"), dict) else None
    return {
        "op": event.get("op"),
        "source": {k: source[k] for k in SOURCE_EVIDENCE if k in source},
        "snapshot": source.get("snapshot"),
        "source_ts_ms": source.get("ts_ms"),
        "ts_ms": event.get("ts_ms"),
        "transaction": transaction,
    }


def _event_time(event: Mapping[str, Any]) -> str:
    source = event["source"]
    # 0 is what a MySQL connector writes when it does not know (its snapshot, its first event)
    ms = source.get("ts_ms") if _is_count(source.get("ts_ms")) and source["ts_ms"] > 0 else event.get("ts_ms")
    if not _is_count(ms):
        raise Unmappable("no commit time (source.ts_ms or ts_ms)")
    try:
        moment = EPOCH_TIME + dt.timedelta(milliseconds=ms)
    except OverflowError:
        raise Unmappable("commit time (source.ts_ms or ts_ms) is beyond the year 9999") from None
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def _shown(value: Any) -> str:
    """A value from the record as a reason shows it: bounded text, or its JSON type."""
    return strict_json.shown(value) if isinstance(value, str) else type(value).__name__


def _is_count(value: Any) -> TypeGuard[int]:
    """A whole number from 0 up, however large (what may not fit is decided where it is used)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
