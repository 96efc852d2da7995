"""Re-verification of what is published, written once for both engines over the unit's ``Sql``:
the engine-neutral verdicts (``procedure.aggregates_verdict``, ``procedure.state_verdict``) over
the newest publications, with the whole-state recomputations each engine makes its own way.
Read-only."""

from __future__ import annotations

from collections.abc import Callable

from replay_assets.core.aggregate import Controls
from replay_assets.storage.apply import latest
from replay_assets.storage.apply.reading import certified_pointer, pruned_through
from replay_assets.storage.publish.aggregates import candidates
from replay_assets.storage.publish.procedure import Verdict, aggregates_verdict, state_verdict
from replay_assets.storage.rules.sql import Sql

PENDING = "SELECT DISTINCT business_date FROM restatement_queue WHERE released_at IS NULL"
NEWEST = """
    SELECT partition_key, version, as_of_load_date, content_sha256 FROM publications WHERE asset = $asset
    QUALIFY row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) = 1
    ORDER BY partition_key"""
_NOT_STORED = ("load_date", "row_count")


def reverify_aggregates(sql: Sql) -> Verdict:
    """Each business date's newest publication, recomputed as of its own load date
    (``aggregates_verdict``)."""
    return aggregates_verdict(
        sql.frame(NEWEST, asset="daily_aggregates"),
        horizon=pruned_through(sql),
        current=certified_pointer(sql) or "",
        pending={str(r["business_date"]) for r in sql.rows(PENDING)},
        aggregates=lambda as_of, dates: candidates(sql, dates, as_of=as_of, from_latest=False),
    )


def reverify_state(
    sql: Sql, *, recomputed: Callable[[str], str], controls: Callable[[str], Controls], newest: int = 7
) -> Verdict:
    """The newest ``newest`` certified load-date snapshots, recomputed (``state_verdict``): the
    engine's ``recomputed`` content hash and ``controls`` of the whole state as of a date."""
    dates = sql.frame(NEWEST, asset="current_orders")
    dates = dates.filter(dates["partition_key"] > pruned_through(sql)).tail(newest)

    def stored(day: str) -> tuple[object, ...] | None:
        found = sql.rows("SELECT * FROM snapshots WHERE load_date = $day", day=day)
        return tuple(v for c, v in found[0].items() if c not in _NOT_STORED) if found else None

    return state_verdict(
        dates,
        recomputed=recomputed,
        controls=lambda day: controls(day).as_tuple(),
        stored=stored,
        differing=latest.differences(sql),
        pointer=certified_pointer(sql) or "",
    )
