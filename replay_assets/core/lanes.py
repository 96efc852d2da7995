"""Which run-queue lane a run belongs to — pure, from run tags.

Every run carries ``replay/lane``: ``backfill`` for any run of a Dagster backfill and for retries
of such runs (Dagster drops the backfill tags from a retry launched after its backfill ended, so
the root run's tags decide), ``current`` for everything else.
"""

from __future__ import annotations

from collections.abc import Mapping

LANE_TAG = "replay/lane"
CURRENT = "current"
BACKFILL = "backfill"
BACKFILL_ID_TAG = "dagster/backfill"
ROOT_RUN_TAG = "dagster/root_run_id"
PARENT_RUN_TAG = "dagster/parent_run_id"


def _is_backfill(tags: Mapping[str, str]) -> bool:
    return BACKFILL_ID_TAG in tags or tags.get(LANE_TAG) == BACKFILL


def lane_for(tags: Mapping[str, str], ancestor_tags: Mapping[str, str] | None = None) -> str:
    """The lane of a run from its own tags and, for a retry, its root (or parent) run's tags."""
    if _is_backfill(tags) or (ancestor_tags is not None and _is_backfill(ancestor_tags)):
        return BACKFILL
    return CURRENT


def ancestor_run_id(tags: Mapping[str, str]) -> str | None:
    """The run whose lane a retry inherits: the root of its retry chain."""
    return tags.get(ROOT_RUN_TAG) or tags.get(PARENT_RUN_TAG)
