"""Landing a verified delivery on Delta: the Spark unit's landing port.

The engine lands the files itself: the client sends only where the files are (paths the
engine's workers read) and their manifest's declarations; the engine (``landing_tiers.py``)
reads each file, checks it against its manifest, certifies the canonical lines in SQL (rules
proven equal to the DuckDB adapter's) and has the oracle decide the rest. The engine keeps
what the tasks yield in a scratch table and appends each table's rows from there, one commit per
table, inside the caller's unit; the client collects a few figures per file. A delivery that
turns out not to match its manifest raises before anything is appended, and nothing of it is
ever read. The DuckDB adapter has one more tier between the grammar and the oracle (DuckDB's
JSON path, proven equal to the oracle); here the oracle decides those lines, so the rows are
the same.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Sequence

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type

from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import Manifest
from replay_assets.core.receipts import LandedCounts
from replay_assets.storage.capabilities import shared
from replay_assets.storage.evidence import written_once
from replay_assets.storage.landing import rows
from replay_assets.storage.landing.area import DeliveryFile, DeliveryMismatch
from replay_assets.storage.landing.rows import Landed
from replay_assets.storage.landing.source_records import (
    RECORD_LINE_FACTOR,
    SOURCE_RECORDS_SCHEMA,
    record_rows,
)
from replay_assets.storage.rules.landing import LANDED_COUNTS_SQL, counts_of
from replay_assets.storage.rules.landing import parameters as counts_parameters
from replay_assets.storage.rules.sql import on_sql
from replay_assets.storage.spark import landing_tiers, schema
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.unit import On

# the table each kind of the tasks' rows lands in
_KINDS = {
    "raw_receipts": "receipt",
    "staged_events": "staged",
    "rejected_events": "rejected",
    "batch_violations": "violation",
}


class LandingReading(On, shared.LandingReads):
    def check_segments(self) -> tuple[int, list[dict[str, object]]]:
        """None to check: the Spark adapter lands every row into its Delta tables."""
        return 0, []

    def landed_counts(self, load_date: str) -> LandedCounts:
        """The shared statement (``rules/landing.py``) over this unit's Delta tables; only the
        counts come back."""
        params = counts_parameters(load_date)
        found = self.u.rows(self.u.sql(over_tables(LANDED_COUNTS_SQL), **params))
        pruned = self.u.frame("pruned_load_dates").where(F.col("load_date") == F.lit(load_date))
        return counts_of(load_date, found, pruned=bool(pruned.limit(1).collect()))


class LandingWriting(LandingReading, shared.LandingRecords):
    def land_batch(
        self,
        manifest: Manifest,
        *,
        files: Sequence[DeliveryFile],
        ctx: ValidationContext,
        now: dt.datetime,
        records: DeliveryFile | None = None,
    ) -> Landed:
        """Idempotent: the same manifest again is a no-op; the same batch_id with other content
        fails closed with REPLAY_BATCH_ID_REUSED and lands nothing."""
        before = self.u.frame("manifests").where(F.col("batch_id") == F.lit(manifest.batch_id))
        known = self.u.rows(before.select("manifest_sha256"))
        if known:
            return rows.landed_again(manifest, known[0]["manifest_sha256"])
        found = rows.Found(violations=rows.schema_gate(manifest, ctx))
        landed = self.u.kept(landing_tiers.landed(self.u, files, ctx))
        figures = self.u.rows(
            landed.where(F.col("kind") == "file").select("source_file", "events", "problem", "upcast")
        )
        for problem in sorted(str(f["problem"]) for f in figures if f["problem"] is not None):
            raise DeliveryMismatch(problem)
        kinds = {r["kind"]: r["n"] for r in self.u.rows(landed.groupBy("kind").agg(F.count("*").alias("n")))}
        batch = {"batch_id": manifest.batch_id, "source": manifest.source, "load_date": manifest.load_date}
        constants = {**batch, "landed_at": now, "detected_at": now}
        for table, kind in _KINDS.items():
            if kinds.get(kind):
                frame = landed.where(F.col("kind") == kind)
                self.u.writing().append(table, _columns(table, frame, constants))
        if records is not None:
            line_bytes = RECORD_LINE_FACTOR * ctx.max_line_bytes
            chunks = [
                pl.DataFrame(c, schema=SOURCE_RECORDS_SCHEMA)
                for c in record_rows(manifest, records, line_bytes)
            ]
            self.u.append_frames("source_records", chunks)
        self.u.append("batch_violations", [{**v, "detected_at": now} for v in found.violations])
        events = sum(int(f["events"]) for f in figures)
        self.u.append("manifests", [rows.manifest_row(manifest, files, events, now)])
        self.u.append("landed_files", rows.landed_file_rows(manifest, files))
        upcast = Counter[tuple[str, int]]()
        for f in figures:
            for version, n in json.loads(f["upcast"]):
                upcast[f["source_file"], version] += n
        upcasts = rows.upcast_rows(manifest, upcast, ctx)
        if upcasts:
            self.u.append("upcast_events", upcasts)
        return Landed(
            manifest.batch_id,
            events,
            rejected=kinds.get("rejected", 0),
            violations=kinds.get("violation", 0) + len(found.violations),
            bytes_read=sum(f.size for f in files),
            new=True,
        )

    record_relanding = on_sql(written_once.record_relanding)


def _columns(table: str, frame: DataFrame, constants: dict[str, object]) -> DataFrame:
    """``frame``'s columns as ``table``'s, by name and type; the batch's constants where named."""
    columns = []
    for field in schema.schemas()[table]:
        value = F.lit(constants[field.name]) if field.name in constants else F.col(field.name)
        columns.append(value.cast(from_arrow_type(field.type)).alias(field.name))
    return frame.select(*columns)
