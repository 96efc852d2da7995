"""Publishing daily aggregates: the queued business dates gated and published as of the
certified pointer, as a journaled operation, so the same dates on the same certified state
publish once, whatever retries happen."""

from __future__ import annotations

from typing import Any

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.apply.facts import contiguous_ranges
from replay_assets.storage.evidence.costs import measure
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.publish.procedure import Published
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published


def publish(pipeline: Pipeline, business_dates: list[str], run_id: str | None) -> list[Published]:
    dates = sorted(business_dates)
    with pipeline.doing("publish", f"{dates[0]}..{dates[-1]}" if dates else "", run_id):
        return _publish(pipeline, dates, run_id)


def _publish(pipeline: Pipeline, dates: list[str], run_id: str | None) -> list[Published]:
    with pipeline.store.connect() as unit:
        op = unit.publish.publish_operation(dates)

    def mutate(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        with measure() as cost:
            published = unit.publish.publish_aggregates(
                pipeline.settings.home, dates=dates, run_id=run_id, now=pipeline.now()
            )
        key = f"{dates[0]}..{dates[-1]}" if dates else ""
        unit.evidence.record_cost(
            run_id=run_id,
            step="publish",
            partition_key=key,
            cost=cost,
            now=pipeline.now(),
            rows_written=sum(p.rows for p in published),
            candidate_bytes=sum(p.candidate_bytes for p in published),
        )
        return {"published": [p.to_record() for p in published]}, unit.publish.publications_digest(dates)

    record = journal.execute(
        pipeline.store,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline),
        target_now=lambda unit, _: unit.publish.publications_digest(dates),
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
    )
    return [Published.from_record(r) for r in record["published"]]


def pending_restatements(
    pipeline: Pipeline, timeout: float | None = None
) -> tuple[list[tuple[str, str]], str]:
    """Contiguous ranges of business dates with queued groups, and a key for the queue state.
    Read through the reader (the last committed state, never the writer lock), so a sensor
    answers while a load runs."""
    with pipeline.store.read(timeout) as unit:
        rows = unit.publish.pending_groups()
    dates = sorted({r[0] for r in rows})
    return contiguous_ranges(dates), sha256_text(canonical_json([list(r) for r in rows]))
