"""Retention (SPEC 10): prune the applied load dates behind the replay horizon, each as its own
journaled operation (crash-safe and idempotent: a retry after a kill anywhere prunes at most
once and finishes the evidence), oldest first. Runs after every certified application."""

from __future__ import annotations

from typing import Any

import duckdb

from replay_assets.core.retention import prunable
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.identities import prune_operation
from replay_assets.storage.publish.certify import pointer
from replay_assets.storage.retention import prune as storage
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.recover import refresh_published


def prune(pipeline: Pipeline) -> list[str]:
    """Prune what the horizon (``retention_load_dates``) leaves behind; returns the dates pruned."""
    keep = pipeline.settings.retention_load_dates
    with pipeline.warehouse.connect() as con:
        applied, done = storage.applied_dates(con), storage.pruned_through(con)
        due = prunable(applied, keep, pruned_through=done, pointer=pointer(con) or "")
        operations = [prune_operation(con, day) for day in due]
    for day, op in zip(due, operations, strict=True):
        _prune_one(pipeline, day, op)
    return due


def _prune_one(pipeline: Pipeline, day: str, op: journal.Operation) -> None:
    keep = pipeline.settings.retention_load_dates

    def mutate(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, Any], str | None]:
        now = pipeline.now()
        removed = storage.prune_load_date(con, day, operation_id=op.operation_id, keep=keep, now=now)
        return {"load_date": day, **removed}, storage.pruned_digest(con, day)

    journal.execute(
        pipeline.warehouse,
        op,
        mutate=mutate,
        evidence=lambda: refresh_published(pipeline),
        target_now=lambda con, _entry: storage.pruned_digest(con, day),
        clock=pipeline.now,
        fail_point=pipeline.settings.fail_point,
    )
