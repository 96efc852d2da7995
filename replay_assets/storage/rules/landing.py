"""What the warehouse holds of a load date's landed files, counted per file from each table on
its own (``core/receipts.py`` judges whether they add up). One statement for both engines: its
``{table}`` names are the tables as each engine reads them (DuckDB: a landing view's rows of the
date's registered files, by name; Spark: the unit's Delta tables), its ``$name`` parameters
bound by the engine, never pasted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from replay_assets.core.errors import Violation
from replay_assets.core.receipts import FileCounts, LandedCounts

# A line the schema gate refused is one violation with its line number; the gate's batch-level
# violation (the manifest's version) has none, and the fold's violations (found when the date is
# applied) are about lines already staged: neither is a decision on a line.
LANDED_COUNTS_SQL = """
WITH counted AS (
    SELECT batch_id, CAST(NULL AS STRING) AS source_file, 0 AS declared, 0 AS receipts, 0 AS staged,
           0 AS rejected, 0 AS refused
    FROM {manifests} WHERE load_date = $day
    UNION ALL
    SELECT batch_id, source_file, events, 0, 0, 0, 0 FROM {landed_files} WHERE load_date = $day
    UNION ALL
    SELECT batch_id, source_file, 0, count(*), 0, 0, 0 FROM {raw_receipts}
    WHERE load_date = $day GROUP BY batch_id, source_file
    UNION ALL
    SELECT batch_id, source_file, 0, 0, count(*), 0, 0 FROM {staged_events}
    WHERE load_date = $day GROUP BY batch_id, source_file
    UNION ALL
    SELECT batch_id, source_file, 0, 0, 0, count(*), 0 FROM {rejected_events}
    WHERE load_date = $day GROUP BY batch_id, source_file
    UNION ALL
    SELECT batch_id, source_file, 0, 0, 0, 0, count(*) FROM (
        SELECT DISTINCT batch_id, source_file, line_number FROM {batch_violations}
        WHERE load_date = $day AND rule = $rule AND line_number IS NOT NULL) refused_lines
    GROUP BY batch_id, source_file
)
SELECT batch_id, source_file, sum(declared) AS declared, sum(receipts) AS receipts, sum(staged) AS staged,
       sum(rejected) AS rejected, sum(refused) AS refused
FROM counted GROUP BY batch_id, source_file ORDER BY batch_id, source_file NULLS FIRST"""
TABLES = (
    "manifests",
    "landed_files",
    "raw_receipts",
    "staged_events",
    "rejected_events",
    "batch_violations",
)


def parameters(load_date: str) -> dict[str, object]:
    return {"day": load_date, "rule": Violation.UNSUPPORTED_SCHEMA_VERSION.value}


def counts_of(load_date: str, rows: Iterable[Mapping[str, Any]], *, pruned: bool) -> LandedCounts:
    """The statement's rows (any engine) as the core's record."""
    files = tuple(
        FileCounts(
            batch_id=str(r["batch_id"]),
            source_file=None if r["source_file"] is None else str(r["source_file"]),
            **{n: int(r[n]) for n in ("declared", "receipts", "staged", "rejected", "refused")},
        )
        for r in rows
    )
    return LandedCounts(load_date, files, pruned=pruned)
