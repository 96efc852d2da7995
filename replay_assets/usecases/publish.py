"""Publishing daily aggregates: the queued business dates gated and published as of the
certified pointer, as a journaled operation, so the same dates on the same certified state
publish once, whatever retries happen."""

from __future__ import annotations

from typing import Any

import duckdb

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply.facts import contiguous_ranges
from replay_assets.storage.evidence.costs import measure, record_cost
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.identities import publications_digest, publish_operation
from replay_assets.storage.publish.aggregates import Published, pending_groups, publish_aggregates
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published


def publish(pipeline: Pipeline, business_dates: list[str], run_id: str | None) -> list[Published]:
    dates = sorted(business_dates)
    with pipeline.doing("publish", f"{dates[0]}..{dates[-1]}" if dates else "", run_id):
        return _publish(pipeline, dates, run_id)


def _publish(pipeline: Pipeline, dates: list[str], run_id: str | None) -> list[Published]:
    with pipeline.warehouse.connect() as con:
        op = publish_operation(con, dates)

    def mutate(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
        with measure() as cost:
            published = publish_aggregates(
                con, pipeline.settings.home, dates=dates, run_id=run_id, now=pipeline.now()
            )
        key = f"{dates[0]}..{dates[-1]}" if dates else ""
        record_cost(
            con,
            run_id=run_id,
            step="publish",
            partition_key=key,
            cost=cost,
            now=pipeline.now(),
            rows_written=sum(p.rows for p in published),
            candidate_bytes=sum(p.candidate_bytes for p in published),
        )
        return {"published": [p.to_record() for p in published]}, publications_digest(con, dates)

    record = journal.execute(
        pipeline.warehouse,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline),
        target_now=lambda con, _: publications_digest(con, dates),
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
    )
    return [Published.from_record(r) for r in record["published"]]


def pending_restatements(
    pipeline: Pipeline, timeout: float | None = None
) -> tuple[list[tuple[str, str]], str]:
    """Contiguous ranges of business dates with queued groups, and a key for the queue state."""
    with pipeline.warehouse.connect(timeout) as con:
        rows = pending_groups(con)
    dates = sorted({r[0] for r in rows})
    return contiguous_ranges(dates), sha256_text(canonical_json([list(r) for r in rows]))
