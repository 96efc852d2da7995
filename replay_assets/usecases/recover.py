"""After a crash: finish the operations a killed process left committed but incomplete
(evidence only), and bring the published copy up to what is certified."""

from __future__ import annotations

from replay_assets.storage.journal import executor as journal
from replay_assets.usecases.context import Pipeline


def finish_in_doubt(pipeline: Pipeline) -> list[str]:
    """Finish operations a killed process left committed but incomplete (evidence only)."""
    return journal.finish_committed(
        pipeline.store, lambda: refresh_published(pipeline), pipeline.now, pipeline.settings.fail_point
    )


def refresh_published(pipeline: Pipeline) -> list[str]:
    """Export what is certified to the published copy (idempotent; after a crash between a
    commit and its export, the next call catches up). A writer's unit: it writes no warehouse
    row, but the files it replaces are the writers' to keep in step."""
    with pipeline.store.transaction() as unit:
        return unit.publish.refresh_published_copy(pipeline.settings.home)
