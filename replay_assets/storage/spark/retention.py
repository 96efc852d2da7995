"""Pruning one load date behind the replay horizon on Delta: the DuckDB adapter's
``retention/prune.py`` (whose docstring says what goes and what stays), as ``MERGE ... DELETE``
statements (Sail 0.7 refuses ``DELETE`` with a subquery)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.rules.latest import DROPPED
from replay_assets.storage.rules.tables import HISTORY_KEYS, PER_DATE, PRUNED_THROUGH
from replay_assets.storage.spark.facts import FactsOps
from replay_assets.storage.spark.stepbase import DELETE_DAY

_COUNTS = ("raw_receipts", "staged_events", "registry_rows", "history_rows")


class RetentionOps(FactsOps):
    def prune_load_date(self, day: str, *, operation_id: str, keep: int, now: dt.datetime) -> dict[str, int]:
        """Prune ``day``; returns the rows removed per kind, also recorded in ``pruned_load_dates``."""
        the_day = self.spark.createDataFrame([(day,)], "load_date string")
        removed = {}
        for table, kind in PER_DATE.items():
            removed[kind] = int(self.frame(table).where(F.col("load_date") == F.lit(day)).count())
            self.merge_frame(table, the_day, DELETE_DAY, matches=("load_date",))
        history = 0
        for table, key in HISTORY_KEYS.items():
            rows = self.frame(table)
            written = rows.where(F.col("load_date") == F.lit(day)).select(*key).distinct()
            superseded = rows.where(F.col("load_date") < F.lit(day)).join(written, list(key), "left_semi")
            count = int(superseded.count())
            if count:
                keys = self.spark.createDataFrame(written.toArrow()).withColumn("day", F.lit(day))
                on = " AND ".join(f"t.{c} = s.{c}" for c in key)
                self.merge_frame(
                    table,
                    keys,
                    f"MERGE INTO {{target}} t USING {{source}} s ON {on} AND t.load_date < s.day "
                    "WHEN MATCHED THEN DELETE",
                )
            history += count
        removed["history_rows"] = history
        self.merge_frame("source_records", the_day, DELETE_DAY, matches=("load_date",))
        self._drop_changes(day)
        row = {
            "load_date": day,
            "operation_id": operation_id,
            "retention_load_dates": keep,
            **removed,
            "pruned_at": now,
        }
        self.append("pruned_load_dates", [row])
        self.merge("pointers", [{"name": PRUNED_THROUGH, "value": day}], on=("name",), update=("value",))
        return removed

    def pruned_digest(self, day: str) -> str | None:
        """What the pruning of ``day`` recorded (its counts), as the operation's target hash."""
        found = self.rows(self.frame("pruned_load_dates").where(F.col("load_date") == F.lit(day)))
        return sha256_text(canonical_json([day, *(found[0][c] for c in _COUNTS)])) if found else None

    def _drop_changes(self, day: str) -> None:
        """Pruning ``day``: its change-log rows go (``latest.drop_changes``)."""
        logged = self.frame("latest_changes").where(F.col("load_date") <= F.lit(day))
        newest = logged.agg(F.max("generation").alias("g")).collect()[0]["g"]
        if newest is None:
            return
        dates = self.spark.createDataFrame(logged.select("load_date").distinct().toArrow())
        self.merge_frame("latest_changes", dates, DELETE_DAY, matches=("load_date",))
        dropped = self.rows(self.frame("pointers").where(F.col("name") == F.lit(DROPPED)))
        value = max(int(dropped[0]["value"]) if dropped else 0, int(newest))
        self.merge("pointers", [{"name": DROPPED, "value": str(value)}], on=("name",), update=("value",))
