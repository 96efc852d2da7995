"""Re-verification of what is published: recompute each publication from history as of its own
``as_of_load_date`` (never from live working state) and compare content hashes. Read-only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import duckdb
import polars as pl

from replay_assets.core.aggregate import aggregate_frame, content_sha256
from replay_assets.storage.apply import latest as newest_rows
from replay_assets.storage.apply import state_digest
from replay_assets.storage.apply.certified import pointer, recomputed_controls
from replay_assets.storage.apply.facts import pruned_through
from replay_assets.storage.apply.snapshot_scan import scan_snapshot
from replay_assets.storage.db.warehouse import one, query_frame
from replay_assets.storage.publish.aggregates import AGG_KEY, lines_for_dates

PENDING = "SELECT DISTINCT business_date FROM restatement_queue WHERE released_at IS NULL"
LATEST = """
    SELECT partition_key, version, as_of_load_date, content_sha256 FROM publications WHERE asset = ?
    QUALIFY row_number() OVER (PARTITION BY partition_key ORDER BY version DESC) = 1
    ORDER BY partition_key"""


@dataclass(frozen=True)
class Verdict:
    checked: int
    mismatched: list[str]  # partition keys whose publication differs from its recomputation
    reasons: dict[str, str] = field(default_factory=dict)  # key -> what differs (sums, hashes)


def reverify_aggregates(con: duckdb.DuckDBPyConnection) -> Verdict:
    """Each business date's newest publication, recomputed as of its own load date
    (``aggregates_verdict``)."""
    pending = {str(r[0]) for r in con.execute(PENDING).fetchall()}
    return aggregates_verdict(
        query_frame(con, LATEST, ["daily_aggregates"]),
        horizon=pruned_through(con),
        current=pointer(con) or "",
        pending=pending,
        lines=lambda as_of, dates: lines_for_dates(con, as_of, dates),
    )


def aggregates_verdict(
    latest: pl.DataFrame,
    *,
    horizon: str,
    current: str,
    pending: set[str],
    lines: Callable[[str, list[str]], pl.DataFrame],
) -> Verdict:
    """Each business date's newest publication (``latest``: partition key, version, as-of load
    date, content hash), recomputed from ``lines`` as of its own load date; one published as of a
    load date behind the retention ``horizon`` (whose state pruning did not keep) is recomputed
    as of the ``current`` certified pointer instead: no load date changed its groups since, or a
    restatement of it would be queued, and a date with a ``pending`` restatement is not checked
    (any engine)."""
    behind = pl.col("as_of_load_date") <= horizon
    latest = latest.filter(~(behind & pl.col("partition_key").is_in(sorted(pending)))).with_columns(
        pl.when(behind).then(pl.lit(current)).otherwise(pl.col("as_of_load_date")).alias("as_of_load_date")
    )
    reasons = {}
    for (as_of,), group in latest.group_by("as_of_load_date"):
        dates = group["partition_key"].to_list()
        rows = aggregate_frame(lines(str(as_of), dates))
        for key, digest in group.select("partition_key", "content_sha256").iter_rows():
            if content_sha256(rows.filter(pl.col("business_date") == key), AGG_KEY) != digest:
                reasons[str(key)] = f"published rows differ from the recomputation as of {as_of}"
    return Verdict(latest.height, sorted(reasons), reasons)


def reverify_state(con: duckdb.DuckDBPyConnection, newest: int = 7) -> Verdict:
    """The newest ``newest`` certified load-date snapshots, recomputed (``state_verdict``)."""
    latest = query_frame(con, LATEST, ["current_orders"])
    latest = latest.filter(pl.col("partition_key") > pruned_through(con)).tail(newest)

    def stored(day: str) -> tuple[object, ...] | None:
        return one(con, "SELECT * EXCLUDE (load_date, row_count) FROM snapshots WHERE load_date = ?", [day])

    return state_verdict(
        latest,
        recomputed=lambda day: _recomputed_digest(con, day),
        controls=lambda day: recomputed_controls(con, day).as_tuple(),
        stored=stored,
        differing=newest_rows.differences(con),
        pointer=pointer(con) or "",
    )


def state_verdict(
    latest: pl.DataFrame,
    *,
    recomputed: Callable[[str], str],
    controls: Callable[[str], tuple[int, ...]],
    stored: Callable[[str], Sequence[object] | None],
    differing: int,
    pointer: str,
) -> Verdict:
    """The certified load-date snapshots of ``latest`` (each a full-state recomputation): the
    published content hash and the stored snapshot record (``stored``: its controls, then its
    hash) must both equal what history recomputed as of that load date gives; and the latest
    tables each date builds on must equal each key's newest history row (``differing`` rows
    differ; flagged on the ``pointer``'s date, whose state they should be). Any engine."""
    reasons = {}
    for key, digest in latest.select("partition_key", "content_sha256").iter_rows():
        day = str(key)
        expected = controls(day)
        record = stored(day)
        if recomputed(day) != digest:
            reasons[day] = "published content hash differs from the recomputation"
        elif record is None or record[-1] != digest:
            reasons[day] = "the snapshot record's hash differs from its publication"
        elif tuple(record[:-1]) != expected:
            reasons[day] = f"stored controls {tuple(record[:-1])} differ from recomputed {expected}"
    if differing:
        found = f"the latest tables differ from history's newest rows by {differing} rows"
        reasons[pointer] = f"{reasons[pointer]}; {found}" if pointer in reasons else found
    return Verdict(latest.height, sorted(reasons), reasons)


def _recomputed_digest(con: duckdb.DuckDBPyConnection, day: str) -> str:
    """The whole state's content hash as of ``day``, by the definition it was certified with: the
    multiset sums (``state_digest.py``, from v7 on; a date with stored sums) or the ordered
    stream hash of the dates certified before."""
    if state_digest.stored(con, day) is not None:
        return state_digest.full(con, day).content_sha256
    return scan_snapshot(con, day).digest
