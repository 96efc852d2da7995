"""Debezium change events mapped onto the native contract (SPEC 2.2) — pure.

Takes the envelope as Debezium writes it through Kafka Connect's JSON converter: with the
``schema``/``payload`` wrapper (``schemas.enable=true``, the default) or bare; ``op`` ``c``/``u``/
``r`` (a snapshot read) as upserts and ``d`` as a delete (its key from ``before``); a Kafka
tombstone (a null value after a delete) carries nothing and maps to no event.

- **Position.** PostgreSQL: ``source.lsn`` (or a generic ``source.seq``). MySQL: the binlog
  coordinates, ``file_no * 2**32 + pos + row`` (``row`` numbers the rows of one multi-row
  binlog event; they lie inside that event's bytes, so the sum is unique and ordered). The
  source's declared ``position_offset`` is subtracted (the contract caps integers at 1e12). A
  streamed change's position is its ``source_seq`` and ``version``.
- **Snapshot reads** share the snapshot's position P. Their ``version`` is P (the state as of P:
  newer than every change before it, older than every change after); their ``source_seq`` —
  unique per source in the contract — numbers them in delivery order just below P
  (``P - n + k`` for the k-th of n reads at P in the file). See docs/design.md for the limits.
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
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from replay_assets.core import strict_json
from replay_assets.core.debezium_time import BadValue
from replay_assets.core.debezium_values import (
    Column,
    FieldSchema,
    JsonNumber,
    decode,
    decoded_image,
    parse_column,
    row_schemas,
    wrapper_schema,
)
from replay_assets.core.events import (
    CUSTOMER_IMAGE,
    ID_FIELDS,
    KEY_FIELDS,
    ORDER_IMAGE,
    SCHEMA_VERSION,
    Entity,
    canonical_json,
)

OPS = {"c": "upsert", "u": "upsert", "r": "upsert", "d": "delete"}
BINLOG_STRIDE = 2**32
_BINLOG_NUMBER = re.compile(r".*?([0-9]+)$")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,127}")
_CONTRACT = {Entity.ORDER_LINE: ORDER_IMAGE, Entity.CUSTOMER: CUSTOMER_IMAGE}
SOURCE_EVIDENCE = ("connector", "name", "db", "schema", "table", "lsn", "txId", "file", "pos", "row", "gtid")


class Unmappable(ValueError):
    """The record cannot be mapped; the message says why (never a row value)."""


@dataclass(frozen=True)
class Table:
    """How one source table maps onto an entity of the contract."""

    entity: Entity
    columns: Mapping[str, Column] = field(default_factory=dict)  # contract field -> source column
    defaults: Mapping[str, Any] = field(default_factory=dict)  # contract field -> value

    def declaration(self) -> dict[str, Any]:
        columns = {name: column.declaration() for name, column in self.columns.items()}
        return {"entity": str(self.entity), "columns": columns, "defaults": dict(self.defaults)}

    def image(
        self, row: Mapping[str, Any], schemas: Mapping[str, FieldSchema] | None = None
    ) -> dict[str, Any]:
        """The contract image of a row, each value decoded from its Debezium encoding
        (``core/debezium_values.py``; ``schemas``: the wrapped message's field schemas)."""
        try:
            out = decoded_image(_CONTRACT[self.entity], self.columns, row, schemas or {})
        except BadValue as bad:
            raise Unmappable(str(bad)) from None
        out.update({k: v for k, v in self.defaults.items() if k not in out})
        for name in ID_FIELDS & set(out):  # the contract's ids are text: an integer key is its digits
            if isinstance(out[name], int) and not isinstance(out[name], bool):
                out[name] = str(out[name])
        return out

    def event_time(
        self, row: Mapping[str, Any], schemas: Mapping[str, FieldSchema] | None = None
    ) -> str | None:
        """The instant of a column declared as ``event_time`` (a timestamp encoding), else None."""
        column = self.columns.get("event_time")
        if column is None:
            return None
        if column.name not in row:
            raise Unmappable(f"event_time (column {column.name!r}) is not in the row")
        try:
            moment = decode("event_time", column, row[column.name], (schemas or {}).get(column.name))
        except BadValue as bad:
            raise Unmappable(str(bad)) from None
        if not isinstance(moment, str) or isinstance(moment, JsonNumber):
            raise Unmappable(f"event_time (column {column.name!r}) is not a timestamp encoding")
        return moment


@dataclass(frozen=True)
class SourceMapping:
    """A source's declared mapping: its tables by name (``schema.table``, ``db.table`` or the bare
    table name) and the offset subtracted from every position."""

    tables: Mapping[str, Table]
    position_offset: int = 0

    def declaration(self) -> dict[str, Any]:
        tables = {name: table.declaration() for name, table in self.tables.items()}
        return {"tables": tables, "position_offset": self.position_offset}

    def table(self, source: Mapping[str, Any]) -> tuple[str, Table]:
        name = source.get("table")
        for prefix in (source.get("schema"), source.get("db"), None):
            qualified = f"{prefix}.{name}" if prefix else str(name)
            if qualified in self.tables:
                return qualified, self.tables[qualified]
        raise Unmappable(f"table {name!r} has no mapping (known: {', '.join(sorted(self.tables))})")


DEFAULT_MAPPING = SourceMapping(
    {
        "order_line": Table(Entity.ORDER_LINE),
        "order_lines": Table(Entity.ORDER_LINE),
        "customer": Table(Entity.CUSTOMER),
        "customers": Table(Entity.CUSTOMER),
    }
)


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
    """The change's place in the source's log: the PostgreSQL LSN or the MySQL binlog coordinates."""
    for name in ("lsn", "seq"):  # PostgreSQL's LSN; ``seq``, SPEC 2.2's generic position
        if _is_int(source.get(name)):
            return int(source[name])
    file, pos, row = source.get("file"), source.get("pos"), source.get("row", 0)
    if isinstance(file, str) and _is_int(pos) and _is_int(row):
        number = _BINLOG_NUMBER.fullmatch(file)
        if number is None:
            raise Unmappable(f"binlog file {file!r} has no number")
        if pos + row >= BINLOG_STRIDE:
            raise Unmappable("binlog position beyond 2**32 within one file")
        return int(number.group(1)) * BINLOG_STRIDE + pos + row
    raise Unmappable("source has no position (source.lsn, source.seq, or source.file and source.pos)")


def to_native(
    event: Mapping[str, Any], mapping: SourceMapping, seq: int | None = None, schema: Any = None
) -> dict[str, Any]:
    """One change event as a native event. ``seq`` is the ``source_seq`` of a snapshot read (given
    by :func:`adapt`, which numbers the reads of one position); a streamed change uses its position.
    ``schema``: a wrapped message's own schema, which names its columns' encodings."""
    op = event.get("op")
    if op not in OPS:
        raise Unmappable(f"op {op!r} is not one of c, u, d, r")
    source = event["source"]
    name, table = mapping.table(source)
    at = position(source) - mapping.position_offset
    if at < 0:
        raise Unmappable("position is below the source's position_offset")
    row = event.get("before") if op == "d" else event.get("after")
    if not isinstance(row, dict):
        raise Unmappable(f"op {op!r} without its {'before' if op == 'd' else 'after'} image")
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


def adapt(messages: Sequence[Any], mapping: SourceMapping) -> list[tuple[dict[str, Any] | None, str | None]]:
    """Each message as (native event or None, why not): None and no reason for a Kafka tombstone,
    None and the reason for a record that cannot be mapped. The snapshot reads of one position
    are numbered in delivery order just below it."""
    parsed: list[dict[str, Any] | Unmappable | None] = []
    for message in messages:
        try:
            parsed.append(envelope(message))
        except Unmappable as bad:
            parsed.append(bad)
    reads: Counter[int] = Counter()
    for found in parsed:
        if isinstance(found, dict) and found.get("op") == "r":
            reads[_snapshot_at(found, mapping)] += 1
    seen: Counter[int] = Counter()
    out: list[tuple[dict[str, Any] | None, str | None]] = []
    for message, found in zip(messages, parsed, strict=True):
        if found is None or isinstance(found, Unmappable):
            out.append((None, None if found is None else str(found)))
            continue
        try:
            seq = None
            if found.get("op") == "r":
                at = _snapshot_at(found, mapping)
                seen[at] += 1
                seq = at - reads[at] + seen[at]
            out.append((to_native(found, mapping, seq, wrapper_schema(message)), None))
        except Unmappable as bad:
            out.append((None, str(bad)))
        except (KeyError, TypeError, AttributeError) as bad:
            out.append((None, f"malformed change event ({type(bad).__name__})"))
    return out


def adapt_file(lines: Sequence[str], mapping: SourceMapping) -> tuple[list[str], list[str]]:
    """A delivered file of converter messages (one JSON value a line) as native lines and source
    records: one record per non-blank line with the native line it became (a record that cannot
    be mapped is passed on as delivered, for validation to reject; a tombstone becomes none), the
    reason, the evidence (:func:`record_of`) and the line as delivered."""
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    messages: list[Any] = []
    unreadable: dict[int, str] = {}
    for n, line in numbered:
        try:
            messages.append(strict_json.loads(line, parse_float=JsonNumber))  # a double's own text
        except strict_json.DuplicateKey as duplicate:
            messages.append(None)
            unreadable[n] = f"not readable: {duplicate}"
        except (ValueError, RecursionError):
            messages.append(None)
            unreadable[n] = "not a JSON value"
    native: list[str] = []
    records: list[str] = []
    for (n, line), message, (event, reason) in zip(numbered, messages, adapt(messages, mapping), strict=True):
        reason = unreadable.get(n, reason)
        if event is not None or reason is not None:
            native.append(canonical_json(event) if event is not None else line)
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


def _snapshot_at(event: Mapping[str, Any], mapping: SourceMapping) -> int:
    """A snapshot read's position, or -1 when it has none (:func:`to_native` says why)."""
    try:
        return position(event["source"]) - mapping.position_offset
    except (Unmappable, KeyError, TypeError):
        return -1


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
    ms = source.get("ts_ms") if _is_int(source.get("ts_ms")) and source["ts_ms"] > 0 else event.get("ts_ms")
    if not _is_int(ms):
        raise Unmappable("no commit time (source.ts_ms or ts_ms)")
    moment = dt.datetime.fromtimestamp(ms // 1000, dt.UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**63


def parse_mappings(value: Any) -> dict[str, SourceMapping]:
    """The settings file's ``debezium``: ``{source: {tables: {name: {entity, columns, defaults}},
    position_offset}}``. Raises ValueError naming the source, the table and the rule."""
    if not isinstance(value, dict):
        raise ValueError("debezium is not an object of source -> mapping")
    return {source: _mapping(spec, f"debezium.{source}") for source, spec in value.items()}


def _mapping(spec: Any, where: str) -> SourceMapping:
    if not isinstance(spec, dict) or set(spec) - {"tables", "position_offset"} or "tables" not in spec:
        raise ValueError(f"{where} is not {{tables, position_offset}}")
    offset = spec.get("position_offset", 0)
    if not _is_int(offset) or offset > 2**62:
        raise ValueError(f"{where}.position_offset is not a whole number")
    tables = spec["tables"]
    if not isinstance(tables, dict) or not tables:
        raise ValueError(f"{where}.tables is not an object of table -> {{entity, columns, defaults}}")
    return SourceMapping({name: _table(t, f"{where}.tables.{name}") for name, t in tables.items()}, offset)


def _table(spec: Any, where: str) -> Table:
    if not isinstance(spec, dict) or set(spec) - {"entity", "columns", "defaults"}:
        raise ValueError(f"{where} is not {{entity, columns, defaults}}")
    if spec.get("entity") not in set(Entity):
        raise ValueError(f"{where}.entity is not one of {', '.join(sorted(Entity))}")
    entity = Entity(spec["entity"])
    columns, defaults = spec.get("columns", {}), spec.get("defaults", {})
    for part, mapping, extra in (("columns", columns, {"event_time"}), ("defaults", defaults, set())):
        if not isinstance(mapping, dict):
            raise ValueError(f"{where}.{part} is not an object keyed by contract field")
        if unknown := sorted(set(mapping) - set(_CONTRACT[entity]) - extra):
            raise ValueError(f"{where}.{part}: {unknown[0]!r} is not a field of {entity}")
    read = {name: parse_column(c, name, f"{where}.columns.{name}") for name, c in columns.items()}
    if bad := [c.name for c in read.values() if not isinstance(c.name, str) or not _COLUMN.fullmatch(c.name)]:
        raise ValueError(f"{where}.columns: {bad[0]!r} is not a column name")
    return Table(entity, read, dict(defaults))
