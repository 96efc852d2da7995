"""Retention: prune the applied load dates behind the replay horizon, each as its own
journaled operation (crash-safe and idempotent: a retry after a kill anywhere prunes at most
once and finishes the evidence), oldest first. Runs after every certified application."""

from __future__ import annotations

from typing import Any

from replay_assets.core.retention import prunable
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published


def prune(pipeline: Pipeline) -> list[str]:
    """Prune what the horizon (``retention_load_dates``) leaves behind; returns the dates pruned."""
    keep = pipeline.settings.retention_load_dates
    with pipeline.store.connect() as unit:
        applied, done = unit.retention.applied_dates(), unit.retention.pruned_through()
        due = prunable(applied, keep, pruned_through=done, pointer=unit.publish.certified_pointer() or "")
        operations = [unit.retention.prune_operation(day) for day in due]
    for day, op in zip(due, operations, strict=True):
        _prune_one(pipeline, day, op)
    return due


def _prune_one(pipeline: Pipeline, day: str, op: journal.Operation) -> None:
    keep = pipeline.settings.retention_load_dates

    def mutate(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        now = pipeline.now()
        removed = unit.retention.prune_load_date(day, operation_id=op.operation_id, keep=keep, now=now)
        return {"load_date": day, **removed}, unit.retention.pruned_digest(day)

    journal.execute(
        pipeline.store,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline),
        target_now=lambda unit, _entry: unit.retention.pruned_digest(day),
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
    )
