"""The operator note of a backfill: who, why, which range, which lane."""

from __future__ import annotations

from replay_assets.usecases.context import Pipeline


def record_backfill(
    pipeline: Pipeline, backfill_id: str, asset: str, first: str, last: str, note: str, operator: str
) -> None:
    with pipeline.warehouse.transaction() as con:
        con.execute(
            "INSERT OR REPLACE INTO backfills ("
            "backfill_id, asset, from_partition, to_partition, lane, note, operator, created_at"
            ") VALUES (?, ?, ?, ?, 'backfill', ?, ?, ?)",
            [backfill_id, asset, first, last, note, operator, pipeline.now()],
        )
