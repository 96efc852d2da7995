"""DuckDB's ``Sql`` (``storage/rules/sql.py``): the shared statements run as written, rows
written by one statement whatever their number (as its parameters, or through Arrow when many)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from replay_assets.storage.rules.sql import identifiers

# rows written as one statement's parameters up to this many; more go through Arrow, which DuckDB
# reads as a relation (binding thousands of parameters costs more than the write itself)
_VALUES_ROWS = 64


class DuckDBSql:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def rows(self, statement: str, **params: Any) -> list[dict[str, Any]]:
        cursor = self.con.execute(statement, params or None)
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def frame(self, statement: str, **params: Any) -> pl.DataFrame:
        found: pl.DataFrame = self.con.sql(statement, params=params or None).pl()
        return found

    def keep(self, name: str, statement: str, **params: Any) -> None:
        kept = identifiers(name)[0]
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {kept} AS {statement}", params or None)

    def insert_from(self, table: str, statement: str, **params: Any) -> int:
        found = self.con.execute(f"INSERT INTO {identifiers(table)[0]} BY NAME {statement}", params or None)
        counted = found.fetchall()
        return int(counted[0][0]) if counted else 0

    def delete(
        self, table: str, statement: str, *, on: Sequence[str], where: str = "", **params: Any
    ) -> None:
        match = " AND ".join([*(f"t.{c} = s.{c}" for c in identifiers(*on)), *([where] if where else [])])
        self.con.execute(
            f"DELETE FROM {identifiers(table)[0]} t USING ({statement}) s WHERE {match}", params or None
        )

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]] | pl.DataFrame) -> None:
        if isinstance(rows, pl.DataFrame):
            if rows.height:
                columns = identifiers(table, *rows.columns)[1:]
                self._from_arrow(table, rows.to_arrow(), columns, "")
            return
        self._write(table, rows, "")

    def upsert(
        self, table: str, rows: Sequence[Mapping[str, Any]], *, on: Sequence[str], keep: Sequence[str] = ()
    ) -> None:
        columns = identifiers(*rows[0]) if rows else ()
        kept = identifiers(*keep)
        update = [f"{c} = excluded.{c}" for c in columns if c not in on and c not in kept]
        update += [f"{c} = coalesce(excluded.{c}, {table}.{c})" for c in kept]
        action = f"DO UPDATE SET {', '.join(update)}" if update else "DO NOTHING"
        self._write(table, rows, f" ON CONFLICT ({', '.join(identifiers(*on))}) {action}")

    def _write(self, table: str, rows: Sequence[Mapping[str, Any]], tail: str) -> None:
        if not rows:
            return
        columns = identifiers(table, *rows[0])[1:]
        named = set(columns)
        if any(row.keys() != named for row in rows):
            raise ValueError(f"rows for {table} name different columns")
        if len(rows) > _VALUES_ROWS:
            self._from_arrow(table, pa.Table.from_pylist([dict(r) for r in rows]), columns, tail)
            return
        one = "(" + ", ".join("?" * len(columns)) + ")"
        values = [row[c] for row in rows for c in columns]
        self.con.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * len(rows))}{tail}", values
        )

    def _from_arrow(self, table: str, rows: pa.Table, columns: Sequence[str], tail: str) -> None:
        listed = ", ".join(columns)
        self.con.register("_rows", rows)
        try:
            self.con.execute(f"INSERT INTO {table} ({listed}) SELECT {listed} FROM _rows{tail}")
        finally:
            self.con.unregister("_rows")
