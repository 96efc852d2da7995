"""Whether ``run`` has anything to do in the warehouse and the landing area: what lets a no-op
``run`` answer without loading Dagster. Each question is one the full path asks (the journal,
retention, the two sensors' decisions and cursors), read under the writer lock; any doubt is
work, and the full path takes it."""

from __future__ import annotations

from replay_assets.core.retention import prunable
from replay_assets.core.status import DateStatus
from replay_assets.storage.home import in_progress
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.sensor_cursors import sense

MANIFEST_SENSOR = "source_manifest_sensor"
RESTATEMENT_SENSOR = "restatement_sensor"
IDLE_RESTATEMENT_CURSOR = ""  # what the restatement sensor saves when nothing is queued


def pending_work(pipeline: Pipeline) -> str | None:
    """Why a ``run`` would have work (the first reason found), or None when it would finish no
    operation, prune nothing, request no run and save no sensor cursor. Writes nothing."""
    if in_progress.note_left(pipeline.settings.home):
        return "a writer's note is in the home (a writer runs, or was killed)"
    with pipeline.store.hold():
        return _stored_work(pipeline) or _landing_work(pipeline)


def _stored_work(pipeline: Pipeline) -> str | None:
    with pipeline.store.connect() as unit:
        unfinished = unit.journal.unfinished_operations()
        applied, done = unit.retention.applied_dates(), unit.retention.pruned_through()
        pointer = unit.publish.certified_pointer() or ""
        queued = unit.publish.pending_groups()
        restatement_cursor = unit.evidence.sensor_cursor(RESTATEMENT_SENSOR)
    if unfinished:
        return "an operation of the journal is not complete"
    if prunable(applied, pipeline.settings.retention_load_dates, pruned_through=done, pointer=pointer):
        return "a load date is due for pruning"
    if queued:
        return "business dates are queued for restatement"
    if restatement_cursor != IDLE_RESTATEMENT_CURSOR:
        return "the restatement sensor's cursor would change"
    return None


def _landing_work(pipeline: Pipeline) -> str | None:
    with pipeline.store.connect() as unit:
        previous = unit.evidence.sensor_cursor(MANIFEST_SENSOR)
    if previous is None:
        return "the manifest sensor never ran"
    decision, cursor = sense(pipeline, previous)
    if cursor != previous:
        return "the landing area changed since the manifest sensor's last tick"
    if decision.unreadable or any(p.status is not DateStatus.APPLIED or p.problem for p in decision.plans):
        return "a load date is not applied"
    return None
