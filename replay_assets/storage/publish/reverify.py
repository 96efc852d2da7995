"""Re-verification of what is published on DuckDB: the engine-neutral verdicts
(``procedure.aggregates_verdict``, ``procedure.state_verdict``) over this engine's recomputations.
Read-only."""

from __future__ import annotations

import duckdb
import polars as pl

from replay_assets.storage.apply import latest as newest_rows
from replay_assets.storage.apply import state_digest
from replay_assets.storage.apply.certified import recomputed_controls
from replay_assets.storage.apply.reading import StoredSums, certified_pointer, pruned_through
from replay_assets.storage.apply.snapshot_scan import scan_snapshot
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.db.warehouse import one, query_frame
from replay_assets.storage.publish.aggregates import candidates
from replay_assets.storage.publish.procedure import Verdict, aggregates_verdict, state_verdict

PENDING = "SELECT DISTINCT business_date FROM restatement_queue WHERE released_at IS NULL"
LATEST = """
    SELECT partition_key, version, as_of_load_date, content_sha256 FROM publications WHERE asset = ?
    QUALIFY row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) = 1
    ORDER BY partition_key"""


def reverify_aggregates(con: duckdb.DuckDBPyConnection) -> Verdict:
    """Each business date's newest publication, recomputed as of its own load date
    (``aggregates_verdict``)."""
    pending = {str(r[0]) for r in con.execute(PENDING).fetchall()}
    return aggregates_verdict(
        query_frame(con, LATEST, ["daily_aggregates"]),
        horizon=pruned_through(DuckDBSql(con)),
        current=certified_pointer(DuckDBSql(con)) or "",
        pending=pending,
        aggregates=lambda as_of, dates: candidates(con, dates, as_of=as_of, from_latest=False),
    )


def reverify_state(con: duckdb.DuckDBPyConnection, newest: int = 7) -> Verdict:
    """The newest ``newest`` certified load-date snapshots, recomputed (``state_verdict``)."""
    latest = query_frame(con, LATEST, ["current_orders"])
    latest = latest.filter(pl.col("partition_key") > pruned_through(DuckDBSql(con))).tail(newest)

    def stored(day: str) -> tuple[object, ...] | None:
        return one(con, "SELECT * EXCLUDE (load_date, row_count) FROM snapshots WHERE load_date = ?", [day])

    return state_verdict(
        latest,
        recomputed=lambda day: _recomputed_digest(con, day),
        controls=lambda day: recomputed_controls(con, day).as_tuple(),
        stored=stored,
        differing=newest_rows.differences(DuckDBSql(con)),
        pointer=certified_pointer(DuckDBSql(con)) or "",
    )


def _recomputed_digest(con: duckdb.DuckDBPyConnection, day: str) -> str:
    """The whole state's content hash as of ``day``, by the definition it was certified with: the
    multiset sums (``state_digest.py``, from v7 on; a date with stored sums) or the ordered
    stream hash of the dates certified before."""
    if StoredSums(DuckDBSql(con)).stored_sums(day) is not None:
        return state_digest.full(con, day).content_sha256
    return scan_snapshot(con, day).digest
