"""Publishing daily aggregates: each business date is a candidate computed from the certified
state, gated, and published as a new version only when all checks pass and content changed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay_assets.core.aggregate import AGGREGATE_COLUMNS, aggregate_frame, content_sha256
from replay_assets.core.gate import CheckOutcome, all_passed, outcome_from_record, outcome_record
from replay_assets.storage.db.warehouse import insert_frame, query_frame
from replay_assets.storage.publish import certify
from replay_assets.storage.publish.steps import PublishSteps
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES
from replay_assets.storage.rules.tables import ORDER_COLUMNS

AGG_KEY = ["store_id", "business_date"]
PART_LINES = 1_000_000


@dataclass(frozen=True)
class Published:
    business_date: str
    version: int | None  # the new version; None when nothing new was published
    content_sha256: str
    rows: int
    checks: tuple[CheckOutcome, ...]
    as_of_load_date: str
    candidate_bytes: int = 0  # temporary storage a failed candidate keeps for inspection

    @property
    def certified(self) -> bool:
        return all_passed(self.checks)

    def to_record(self) -> dict[str, Any]:
        return {
            "business_date": self.business_date,
            "version": self.version,
            "content_sha256": self.content_sha256,
            "rows": self.rows,
            "as_of_load_date": self.as_of_load_date,
            "candidate_bytes": self.candidate_bytes,
            "checks": [outcome_record(o) for o in self.checks],
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Published:
        checks = tuple(outcome_from_record(c) for c in r["checks"])
        return cls(
            r["business_date"],
            r["version"],
            content_sha256=r["content_sha256"],
            rows=r["rows"],
            checks=checks,
            as_of_load_date=r["as_of_load_date"],
            candidate_bytes=r["candidate_bytes"],
        )


def lines_for_dates(con: duckdb.DuckDBPyConnection, as_of: str, dates: list[str]) -> pl.DataFrame:
    """Order lines whose state as of ``as_of`` is on one of ``dates``. Only keys with some row
    on those dates can be (the state's own row is one), so the window ranks just those keys."""
    cols = ", ".join(f"h.{c}" for c in ORDER_COLUMNS)
    return query_frame(
        con,
        f"""
        SELECT * FROM (
          SELECT {cols} FROM order_history h SEMI JOIN (
              SELECT order_id, line_no FROM order_history
              WHERE load_date <= ? AND list_contains(?, business_date)) k
            ON h.order_id = k.order_id AND h.line_no = k.line_no
          WHERE h.load_date <= ?
          QUALIFY row_number() OVER (PARTITION BY h.order_id, h.line_no ORDER BY h.load_date DESC) = 1)
        WHERE list_contains(?, business_date)""",
        [as_of, dates, as_of, dates],
    )


def latest_lines(con: duckdb.DuckDBPyConnection, dates: list[str]) -> pl.DataFrame:
    """Order lines on one of ``dates`` in the latest tables (the state as of the newest date)."""
    cols = ", ".join(ORDER_COLUMNS)
    return query_frame(con, f"SELECT {cols} FROM order_latest WHERE list_contains(?, business_date)", [dates])


def publish_aggregates(
    steps: PublishSteps, home: Path, dates: list[str], run_id: str | None, now: dt.datetime
) -> list[Published]:
    """Candidates as of the certified pointer. Idempotent: same content publishes nothing new.
    Queued restatements of a date are released only when its candidate passes. Engine-neutral:
    each engine supplies the steps (``PublishSteps``)."""
    as_of = steps.candidates.certified_pointer()
    if as_of is None:
        return []
    from_latest = steps.candidates.latest_holds_as_of(as_of)
    recomputed = steps.candidates.recomputed_aggregates(dates, as_of=as_of, from_latest=from_latest)
    reconciliation = steps.candidates.applied_reconciliation(as_of)
    first = steps.candidates.first_applied() or as_of
    certified = steps.candidates.certified_load_dates()
    out = []
    for part in _parts(sorted(dates), recomputed):
        lines = (
            steps.candidates.latest_lines(part)
            if from_latest
            else steps.candidates.lines_for_dates(as_of, part)
        )
        candidates = aggregate_frame(lines)
        matched = certify.aggregates_matched(candidates)  # else each date is validated on its own
        for day in part:
            rows = candidates.filter(pl.col("business_date") == day)
            checks = tuple(
                certify.aggregate_checks(
                    rows,
                    recomputed.filter(pl.col("business_date") == day).cast(candidates.schema),
                    reconciliation=reconciliation,
                    as_of=as_of,
                    first=first,
                    certified=certified,
                    matched=matched,
                )
            )
            digest = content_sha256(rows, AGG_KEY)
            version, kept = _publish_or_keep(
                steps,
                home,
                day=day,
                rows=rows,
                digest=digest,
                as_of=as_of,
                checks=checks,
                run_id=run_id,
                now=now,
            )
            out.append(
                Published(
                    day,
                    version,
                    content_sha256=digest,
                    rows=rows.height,
                    checks=checks,
                    as_of_load_date=as_of,
                    candidate_bytes=kept,
                )
            )
    return out


def _parts(dates: list[str], recomputed: pl.DataFrame) -> list[list[str]]:
    """Business dates in groups of at most about PART_LINES active lines (a date alone may hold
    more), so a range restatement never holds the whole state's lines at once."""
    lines = dict(recomputed.group_by("business_date").agg(pl.col("line_count").sum()).iter_rows())
    parts: list[list[str]] = [[]]
    held = 0
    for day in dates:
        size = int(lines.get(day, 0))
        if parts[-1] and held + size > PART_LINES:
            parts.append([])
            held = 0
        parts[-1].append(day)
        held += size
    return parts


def _publish_or_keep(
    steps: PublishSteps,
    home: Path,
    day: str,
    rows: pl.DataFrame,
    digest: str,
    as_of: str,
    checks: tuple[CheckOutcome, ...],
    run_id: str | None,
    now: dt.datetime,
) -> tuple[int | None, int]:
    """The new version (None when nothing new was published, or the date never had sales) and
    the bytes a failed candidate keeps on disk for inspection (0 when it passed)."""
    if not all_passed(checks):
        kept = steps.publications.record_failed_candidate(
            home,
            asset="daily_aggregates",
            key=day,
            as_of=as_of,
            digest=digest,
            outcomes=checks,
            rows=rows,
            run_id=run_id,
            now=now,
        )
        return None, kept.stat().st_size
    if not rows.height and steps.publications.last_publication("daily_aggregates", day) is None:
        # a date that never had sales publishes nothing (no empty "version 1" to certify); a
        # date whose sales all went away is a real restatement to zero and publishes below
        steps.publications.release_queue(day, as_of=as_of, now=now, run_id=run_id)
        return None, 0
    version = steps.publications.record_publication(
        "daily_aggregates", key=day, as_of=as_of, digest=digest, outcomes=checks, run_id=run_id, now=now
    )
    if version is not None and rows.height:
        versions = rows.select(AGGREGATE_COLUMNS).with_columns(
            pl.lit(version).cast(pl.Int64).alias("publication_version"),
            pl.lit(as_of).alias("as_of_load_date"),
            pl.lit(now).alias("certified_at"),
        )
        steps.publications.insert_aggregate_versions(versions)
    steps.publications.release_queue(day, as_of=as_of, now=now, run_id=run_id)
    return version, 0


def recomputed(
    con: duckdb.DuckDBPyConnection, dates: list[str], *, as_of: str, from_latest: bool
) -> pl.DataFrame:
    """The aggregates of ``dates`` by SQL over the state as of ``as_of`` (another path than the
    candidates' polars one)."""
    state, params = ("order_latest", {}) if from_latest else ("orders_as_of($as_of)", {"as_of": as_of})
    return query_frame(con, SQL_AGGREGATES.format(state=state), {**params, "dates": dates})


def insert_versions(con: duckdb.DuckDBPyConnection, versions: pl.DataFrame) -> None:
    insert_frame(con, "aggregate_versions", versions)


def release_queue(
    con: duckdb.DuckDBPyConnection, day: str, *, as_of: str, now: dt.datetime, run_id: str | None
) -> None:
    """The queued groups of ``day`` up to ``as_of`` are published: released by this run."""
    con.execute(
        """UPDATE restatement_queue SET released_at = ?, released_by = ?
                   WHERE business_date = ? AND load_date <= ? AND released_at IS NULL""",
        [now, run_id, day, as_of],
    )


def pending_groups(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]]:
    """The queued groups a restatement will publish: (business date, store, load date, queued
    at as text), of load dates the published pointer has reached, in order."""
    rows = con.execute("""
        SELECT business_date, store_id, load_date, CAST(queued_at AS VARCHAR)
        FROM restatement_queue WHERE released_at IS NULL
          AND load_date <= (SELECT max(value) FROM pointers WHERE name = 'published_load_date')
        ORDER BY 1, 2, 3""").fetchall()
    return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]  # all VARCHAR but queued_at
