"""Pruning one load date behind the replay horizon on Delta: the DuckDB adapter's
``retention/prune.py`` (whose docstring says what goes and what stays), as ``MERGE ... DELETE``
statements (Sail 0.7 refuses ``DELETE`` with a subquery). The evidence goes by the rules both
engines share (``rules/retention.py``): each rule's keys computed by the engine, then one
``MERGE ... DELETE`` of the rows matching them."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from replay_assets.storage.apply import latest
from replay_assets.storage.capabilities import shared
from replay_assets.storage.rules.retention import PRUNED_EVIDENCE
from replay_assets.storage.rules.tables import HISTORY_KEYS, PER_DATE, PRUNED_THROUGH
from replay_assets.storage.spark.dialect import over_tables
from replay_assets.storage.spark.stepbase import DELETE_DAY
from replay_assets.storage.spark.unit import On, UnitBase

_COUNTS = ("raw_receipts", "staged_events", "registry_rows", "history_rows")


class RetentionReading(On, shared.RetentionReads):
    pass


class RetentionWriting(RetentionReading):
    def prune_load_date(self, day: str, *, operation_id: str, keep: int, now: dt.datetime) -> dict[str, int]:
        """Prune ``day``; returns the rows removed per kind, also recorded in ``pruned_load_dates``."""
        the_day = self.u.spark.createDataFrame([(day,)], "load_date string")
        removed = {}
        for table, kind in PER_DATE.items():
            removed[kind] = int(self.u.frame(table).where(F.col("load_date") == F.lit(day)).count())
            self.u.merge_frame(table, the_day, DELETE_DAY, matches=("load_date",))
        history = 0
        for table, key in HISTORY_KEYS.items():
            rows = self.u.frame(table)
            written = rows.where(F.col("load_date") == F.lit(day)).select(*key).distinct()
            superseded = rows.where(F.col("load_date") < F.lit(day)).join(written, list(key), "left_semi")
            count = int(superseded.count())
            if count:
                keys = self.u.spark.createDataFrame(written.toArrow()).withColumn("day", F.lit(day))
                on = " AND ".join(f"t.{c} = s.{c}" for c in key)
                self.u.merge_frame(
                    table,
                    keys,
                    f"MERGE INTO {{target}} t USING {{source}} s ON {on} AND t.load_date < s.day "
                    "WHEN MATCHED THEN DELETE",
                )
            history += count
        removed["history_rows"] = history
        self.u.merge_frame("source_records", the_day, DELETE_DAY, matches=("load_date",))
        _prune_evidence(self.u, day)
        latest.drop_changes(self.sql, day)
        row = {
            "load_date": day,
            "operation_id": operation_id,
            "retention_load_dates": keep,
            **removed,
            "pruned_at": now,
        }
        self.u.append("pruned_load_dates", [row])
        self.u.merge("pointers", [{"name": PRUNED_THROUGH, "value": day}], on=("name",), update=("value",))
        return removed


def _prune_evidence(u: UnitBase, day: str) -> None:
    """The journal's, attempts' and costs' rows of work before ``day`` was applied, by the shared
    rules in their order: each rule's keys (a few small values) come here and go back as the
    source of its ``MERGE``, so a later rule's delete cannot change what an earlier one chose."""
    for rule in PRUNED_EVIDENCE:
        keys = u.sql(over_tables(rule.select), day=day).toArrow()
        if keys.num_rows:
            u.merge_frame(
                rule.table,
                u.local(keys),
                f"MERGE INTO {{target}} t USING {{source}} s ON {rule.match()} WHEN MATCHED THEN DELETE",
                matches=rule.keys,
            )
