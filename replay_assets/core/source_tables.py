"""How a source's tables map onto the contract's entities, and its declaration in the
settings file's ``debezium`` — pure.

A table is known by its full name only: ``schema.table``, or ``db.table`` for MySQL, which has
no schemas, so the same table name in two schemas is two tables. Without a declaration only
the default schema ``public`` (PostgreSQL's) maps, tables ``order_line(s)`` and ``customer(s)``
by their own column names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from replay_assets.core import strict_json
from replay_assets.core.debezium_time import BadValue
from replay_assets.core.debezium_values import (
    Column,
    FieldSchema,
    JsonNumber,
    decode,
    decoded_image,
    parse_column,
)
from replay_assets.core.events import CUSTOMER_IMAGE, ID_FIELDS, ORDER_IMAGE, Entity

DEFAULT_SCHEMA = "public"  # PostgreSQL's default schema: the only one the default mapping reads
_FULL_NAME = re.compile(r"[^.]+\.[^.]+")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,127}")
_CONTRACT = {Entity.ORDER_LINE: ORDER_IMAGE, Entity.CUSTOMER: CUSTOMER_IMAGE}


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
    """A source's declared mapping: its tables by full name (``schema.table``, or ``db.table``
    for MySQL) and the offset subtracted from every position."""

    tables: Mapping[str, Table]
    position_offset: int = 0

    def declaration(self) -> dict[str, Any]:
        tables = {name: table.declaration() for name, table in self.tables.items()}
        return {"tables": tables, "position_offset": self.position_offset}

    def table(self, source: Mapping[str, Any]) -> tuple[str, Table]:
        """The record's table, by its full name only: the same table name in another schema
        or database is another table, never merged into a mapped one."""
        name = full_name(source)
        if name not in self.tables:
            raise Unmappable(
                f"table {strict_json.shown(name)} is not mapped (mapped: {', '.join(sorted(self.tables))})"
            )
        return name, self.tables[name]


def full_name(source: Mapping[str, Any]) -> str:
    """``schema.table`` (PostgreSQL), or ``db.table`` for MySQL, whose source block has no schema."""
    table, prefix = source.get("table"), source.get("schema") or source.get("db")
    if not isinstance(table, str) or not isinstance(prefix, str):
        raise Unmappable("source names no table (source.table with source.schema or source.db)")
    return f"{prefix}.{table}"


DEFAULT_MAPPING = SourceMapping(
    {
        f"{DEFAULT_SCHEMA}.{name}": Table(entity)
        for name, entity in (
            ("order_line", Entity.ORDER_LINE),
            ("order_lines", Entity.ORDER_LINE),
            ("customer", Entity.CUSTOMER),
            ("customers", Entity.CUSTOMER),
        )
    }
)


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
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= 2**62:
        raise ValueError(f"{where}.position_offset is not a whole number")
    tables = spec["tables"]
    if not isinstance(tables, dict) or not tables:
        raise ValueError(f"{where}.tables is not an object of table -> {{entity, columns, defaults}}")
    if bare := [name for name in tables if not _FULL_NAME.fullmatch(name)]:
        raise ValueError(
            f"{where}.tables.{bare[0]} is not a full table name (schema.table, db.table for MySQL)"
        )
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
