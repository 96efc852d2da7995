"""The operator note of a backfill: who, why, which range, which lane."""

from __future__ import annotations

from replay_assets.usecases.context import Pipeline


def record_backfill(
    pipeline: Pipeline, backfill_id: str, asset: str, first: str, last: str, note: str, operator: str
) -> None:
    with pipeline.store.transaction() as unit:
        unit.evidence.record_backfill(
            backfill_id,
            asset=asset,
            first=first,
            last=last,
            note=note,
            operator=operator,
            now=pipeline.now(),
        )
