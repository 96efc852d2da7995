"""Publishing daily aggregates: the statements of the steps (``steps.PublishSteps``) of the
engine-neutral procedure (``procedure.publish_aggregates``), written once over the unit's
``Sql`` (the gate's recomputation is each engine's own path to the state)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from replay_assets.storage.rules.aggregates import candidate_aggregates
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.rules.tables import RECON_COLUMNS

_QUEUE_KEY = ("business_date", "store_id", "load_date")


def candidates(sql: Sql, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
    """The candidate aggregates of ``dates`` as of ``as_of``, by the shared statement
    (``rules.aggregates.candidate_aggregates``): no order line leaves the engine."""
    statement = candidate_aggregates("order_latest" if from_latest else None, "order_history")
    params: dict[str, object] = {"dates": dates} if from_latest else {"dates": dates, "as_of": as_of}
    return sql.frame(statement, **params)


def applied_reconciliation(sql: Sql, as_of: str) -> pl.DataFrame:
    return sql.frame(
        f"""SELECT {", ".join(RECON_COLUMNS)} FROM reconciliation
        WHERE status = 'APPLIED' AND load_date <= $as_of""",
        as_of=as_of,
    )


def insert_versions(sql: Sql, versions: pl.DataFrame) -> None:
    sql.insert("aggregate_versions", versions)


def release_queue(sql: Sql, days: list[str], *, as_of: str, now: dt.datetime, run_id: str | None) -> None:
    """The queued groups of ``days`` up to ``as_of`` are published: released by this run."""
    queued = sql.rows(
        """SELECT business_date, store_id, load_date, queued_at FROM restatement_queue
        WHERE list_contains($days, business_date) AND load_date <= $as_of AND released_at IS NULL""",
        days=days,
        as_of=as_of,
    )
    released = [{**row, "released_at": now, "released_by": run_id} for row in queued]
    sql.upsert("restatement_queue", released, on=_QUEUE_KEY)
