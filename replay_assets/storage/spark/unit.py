"""What every capability of the Spark unit stands on: a table as this unit sees it (the writer's
head with its own writes, or the reader's pinned fence), appending typed rows, and one guarded
``MERGE``. Values reach Spark as DataFrames and column expressions, never as SQL text.

The capabilities (``landing.py``, ``apply.py``, ...) are small classes over one ``UnitBase``
(``On``) that complete the shared ones (``capabilities/shared.py``) with this engine's steps:
each holds the unit as ``u`` and its ``Sql`` (``SparkSql``), and reaches another capability's
rule through an object of it over the same unit, never by inheriting it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import DataFrame

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.spark import schema
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.frames import local_frame, to_polars
from replay_assets.storage.spark.schema import cast_to
from replay_assets.storage.spark.tables import DeltaTables, Snapshot, Writer


class UnitBase:
    def __init__(self, tables: DeltaTables, snapshot: Snapshot, writer: Writer | None) -> None:
        self.tables = tables
        self.snapshot = snapshot
        self.writer = writer
        self.spark = tables.spark
        self.scratch: list[str] = []  # scratch tables of large local frames (``local``)

    def local(self, table: pa.Table) -> DataFrame:
        """An Arrow table of this process as a Spark frame (``frames.local_frame``)."""
        return local_frame(self.spark, table, self._scratch)

    def kept(self, frame: DataFrame) -> DataFrame:
        """``frame`` computed now, in a scratch Delta table the engine writes, and read from it:
        later writes to the tables it reads do not change it."""
        path = self._scratch()
        frame.write.format("delta").mode("overwrite").save(path)
        return self.spark.read.format("delta").load(path)

    def close(self) -> None:
        """Remove the unit's scratch tables (their frames are not read after the unit)."""
        for uri in self.scratch:
            filesystem, path = pafs.FileSystem.from_uri(uri)
            if filesystem.get_file_info(path).type != pafs.FileType.NotFound:  # a write that failed
                filesystem.delete_dir(path)
        self.scratch.clear()

    def _scratch(self) -> str:
        self.scratch.append(f"{self.tables.root}/_scratch/{uuid.uuid4().hex}")
        return self.scratch[-1]

    def frame(self, table: str) -> DataFrame:
        """``table`` as this unit sees it; empty, with its columns, before its first commit."""
        if self.writer is not None:
            if self.writer.base.get(table) is not None or self.writer.commits.get(table):
                return self.writer.head(table)
        else:
            found = self.tables.read(table, self.snapshot)
            if found is not None:
                return found
        return self._frame(table, [])

    def rows(self, frame: DataFrame) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = frame.toArrow().to_pylist()
        return found

    def sql(self, text: str, **args: Any) -> DataFrame:
        """``text`` with ``{table}`` naming the warehouse's tables as this unit sees them (each a
        temporary view of this session) and ``:name`` parameters from ``args``."""
        names = {}
        for table in schema.schemas():
            if "{" + table + "}" in text:
                names[table] = f"_t_{table}"
                self.frame(table).createOrReplaceTempView(names[table])
        return self.spark.sql(text.format(**names), args=args)

    def append(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append ``rows`` (column to value; a missing column is null) as one commit (none for
        no row: Sail commits nothing for an empty append)."""
        if rows:
            self.writing().append(table, self._frame(table, rows))

    def append_frames(self, table: str, frames: Sequence[pl.DataFrame]) -> None:
        """Append the rows of ``frames`` as one commit (none when they hold no row): columns by
        name, cast to the table's types, a missing one null. Through Arrow, never row by row."""
        frames = [f for f in frames if f.height]
        if frames:
            self.writing().append(table, self.table_frame(table, pl.concat(frames, how="diagonal_relaxed")))

    def table_frame(self, table: str, rows: pl.DataFrame) -> DataFrame:
        """``rows`` as a local Spark frame of ``table``'s columns: by name, cast to the table's
        types, a missing one null (through Arrow)."""
        columns = schema.schemas()[table]
        missing = [pl.lit(None).alias(name) for name in columns.names if name not in rows.columns]
        return self.local(rows.with_columns(missing).select(columns.names).to_arrow().cast(columns))

    def merge(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        on: Sequence[str],
        update: Sequence[str],
        keep: Sequence[str] = (),
    ) -> None:
        """Set ``update`` from ``rows`` on the rows matching ``on``, and insert the rows that match
        none, as one commit (an upsert by key); a column of ``keep`` keeps its value where the
        row brings none."""
        match = " AND ".join(f"t.{c} = s.{c}" for c in on)
        assignments = ", ".join(
            [*(f"{c} = s.{c}" for c in update), *(f"{c} = coalesce(s.{c}, t.{c})" for c in keep)]
        )
        self.merge_frame(
            table,
            self._frame(table, rows),
            f"MERGE INTO {{target}} t USING {{source}} s ON {match} "
            f"WHEN MATCHED THEN UPDATE SET {assignments} WHEN NOT MATCHED THEN INSERT *",
        )

    def merge_frame(
        self, table: str, source: DataFrame, statement: str, *, matches: Sequence[str] | None = None
    ) -> None:
        """One ``MERGE`` of ``source`` into ``table`` (``{target}`` and ``{source}`` in
        ``statement``). An upsert (it inserts what does not match) by default; with ``matches``, a
        statement that only updates or deletes the rows equal to a source row on those columns.

        Sail 0.7 commits nothing for a ``MERGE`` that changes nothing, and the writer's fence
        counts its commits, so a ``MERGE`` runs only when it will change a row: an upsert of a
        non-empty source (an unchanged row is rewritten, a commit), or a matching row for the
        others. Into a table not created yet, an upsert is an append."""
        writer = self.writing()
        if not source.limit(1).collect():
            return
        exists = writer.base.get(table) is not None or bool(writer.commits.get(table))
        if matches is not None:
            if (
                not exists
                or not self.frame(table)
                .join(source.select(list(matches)), list(matches), "left_semi")
                .limit(1)
                .collect()
            ):
                return
        elif not exists:
            writer.append(table, source)
            return
        view = f"_src_{uuid.uuid4().hex}"
        source.createOrReplaceTempView(view)
        try:
            writer.statement(table, statement.replace("{source}", view))
        finally:
            self.spark.catalog.dropTempView(view)

    def _frame(self, table: str, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
        columns = schema.schemas()[table]
        return self.local(pa.Table.from_pylist([dict(r) for r in rows], schema=columns))

    def writing(self) -> Writer:
        if self.writer is None:
            raise ReplayError(ErrorCode.USAGE, "a reader's unit of the warehouse cannot write")
        return self.writer


class On:
    """A capability of one unit: its operations over the unit's helpers."""

    def __init__(self, u: UnitBase) -> None:
        self.u = u
        self.spark = u.spark
        self.sql: Sql = SparkSql(u)


class SparkSql:
    """Spark's ``Sql`` (``storage/rules/sql.py``) over one unit: a shared statement rendered over
    the tables as the unit sees them; rows written as one commit, an upsert as one ``MERGE``."""

    def __init__(self, u: UnitBase) -> None:
        self.u = u

    def rows(self, statement: str, **params: Any) -> list[dict[str, Any]]:
        return self.u.rows(self._planned(statement, params))

    def frame(self, statement: str, **params: Any) -> pl.DataFrame:
        return to_polars(self._planned(statement, params))

    def keep(self, name: str, statement: str, **params: Any) -> None:
        self.u.kept(self._planned(statement, params)).createOrReplaceTempView(name)

    def insert_from(self, table: str, statement: str, **params: Any) -> int:
        return self.u.writing().appended(table, cast_to(table, self._planned(statement, params)))

    def delete(
        self, table: str, statement: str, *, on: Sequence[str], where: str = "", **params: Any
    ) -> None:
        match = " AND ".join([*(f"t.{c} = s.{c}" for c in on), *([where] if where else [])])
        self.u.merge_frame(
            table,
            self._planned(statement, params),
            f"MERGE INTO {{target}} t USING {{source}} s ON {match} WHEN MATCHED THEN DELETE",
            matches=on,
        )

    def _planned(self, statement: str, params: Mapping[str, Any]) -> DataFrame:
        return self.u.sql(over_tables(statement), **params)

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]] | pl.DataFrame) -> None:
        if isinstance(rows, pl.DataFrame):
            self.u.append_frames(table, [rows])
        else:
            self.u.append(table, rows)

    def upsert(
        self, table: str, rows: Sequence[Mapping[str, Any]], *, on: Sequence[str], keep: Sequence[str] = ()
    ) -> None:
        if rows:
            update = [c for c in rows[0] if c not in on and c not in keep]
            self.u.merge(table, rows, on=on, update=update, keep=keep)
