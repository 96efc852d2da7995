"""Publishing daily aggregates, engine-neutral: each business date is a candidate computed from
the certified state, gated, and published as a new version only when all checks pass and content
changed; and re-verifying what is published (recompute each publication from history as of its
own ``as_of_load_date``, never from live working state, and compare content hashes). Each engine
supplies the steps (``steps.PublishSteps``) and the recomputations; this module imports no engine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from replay_assets.core.aggregate import AGGREGATE_COLUMNS, Controls, content_sha256
from replay_assets.core.gate import (
    CheckOutcome,
    all_passed,
    check_completeness,
    check_non_negative,
    check_reconciliation,
    check_schema,
    check_totals,
    check_unique_keys,
    outcome_from_record,
    outcome_record,
    schema_matched,
)
from replay_assets.storage.publish.steps import Candidate, PublishSteps

AGG_KEY = ["store_id", "business_date"]
PART_LINES = 1_000_000
AGGREGATE_TYPES = pl.Schema({c: pl.String if c in AGG_KEY else pl.Int64 for c in AGGREGATE_COLUMNS})


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


def publish_aggregates(
    steps: PublishSteps, home: Path, dates: list[str], run_id: str | None, now: dt.datetime
) -> list[Published]:
    """Candidates as of the certified pointer. Idempotent: same content publishes nothing new.
    Queued restatements of a date are released only when its candidate passes. Engine-neutral:
    each engine supplies the steps (``PublishSteps``). The passed candidates of all the dates are
    written together (one write a table, not one a date: each write is a commit on Delta)."""
    as_of = steps.candidates.certified_pointer()
    if as_of is None:
        return []
    from_latest = steps.candidates.latest_holds_as_of(as_of)
    recomputed = steps.candidates.recomputed_aggregates(dates, as_of=as_of, from_latest=from_latest)
    reconciliation = steps.candidates.applied_reconciliation(as_of)
    first = steps.candidates.first_applied() or as_of
    certified = steps.candidates.certified_load_dates()
    out = []
    passed: dict[str, tuple[Candidate, pl.DataFrame]] = {}
    for part in _parts(sorted(dates), recomputed):
        found = steps.candidates.candidate_aggregates(part, as_of=as_of, from_latest=from_latest)
        candidates = typed_aggregates(found)
        matched = aggregates_matched(candidates)  # else each date is validated on its own
        for day in part:
            rows = candidates.filter(pl.col("business_date") == day)
            checks = tuple(
                aggregate_checks(
                    rows,
                    recomputed.filter(pl.col("business_date") == day).cast(candidates.schema),
                    reconciliation=reconciliation,
                    as_of=as_of,
                    first=first,
                    certified=certified,
                    matched=matched,
                )
            )
            candidate = Candidate(day, content_sha256(rows, AGG_KEY), checks)
            kept = 0
            if all_passed(checks):
                passed[day] = (candidate, rows)
            else:
                kept = _keep(steps, home, candidate, rows=rows, as_of=as_of, run_id=run_id, now=now)
            out.append(
                Published(
                    day,
                    None,
                    content_sha256=candidate.digest,
                    rows=rows.height,
                    checks=checks,
                    as_of_load_date=as_of,
                    candidate_bytes=kept,
                )
            )
    versions = _publish(steps, passed, as_of=as_of, run_id=run_id, now=now)
    return [replace(p, version=versions.get(p.business_date)) for p in out]


def typed_aggregates(found: pl.DataFrame) -> pl.DataFrame:
    """An engine's aggregate rows in the core's columns and types (text keys, 64-bit integers:
    DuckDB sums to 128 bits), so their content hash is the same on every engine."""
    return found.select(AGGREGATE_COLUMNS).cast(AGGREGATE_TYPES)


def _parts(dates: list[str], recomputed: pl.DataFrame) -> list[list[str]]:
    """Business dates in groups of at most about PART_LINES active lines (a date alone may hold
    more), so a range restatement never ranks the whole state's lines in one statement."""
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


def _keep(
    steps: PublishSteps,
    home: Path,
    candidate: Candidate,
    rows: pl.DataFrame,
    as_of: str,
    run_id: str | None,
    now: dt.datetime,
) -> int:
    """A failed candidate kept for inspection; the bytes it keeps on disk."""
    kept = steps.publications.record_failed_candidate(
        home,
        asset="daily_aggregates",
        key=candidate.key,
        as_of=as_of,
        digest=candidate.digest,
        outcomes=candidate.checks,
        rows=rows,
        run_id=run_id,
        now=now,
    )
    return kept.stat().st_size


def _publish(
    steps: PublishSteps,
    passed: dict[str, tuple[Candidate, pl.DataFrame]],
    *,
    as_of: str,
    run_id: str | None,
    now: dt.datetime,
) -> dict[str, int | None]:
    """The passed candidates published (a new version where the content changed), their rows
    kept as that version, and their dates' queue released; the new version of each date that
    got one."""
    writes = steps.publications
    empty = [day for day, (_, rows) in passed.items() if not rows.height]
    # a date that never had sales publishes nothing (no empty "version 1" to certify); a date
    # whose sales all went away is a real restatement to zero and publishes
    never = set(empty) - set(writes.last_publications("daily_aggregates", empty) if empty else {})
    publish = [c for day, (c, _) in passed.items() if day not in never]
    versions = (
        writes.record_publications("daily_aggregates", publish, as_of=as_of, run_id=run_id, now=now)
        if publish
        else {}
    )
    kept = [
        passed[day][1]
        .select(AGGREGATE_COLUMNS)
        .with_columns(pl.lit(version).cast(pl.Int64).alias("publication_version"))
        for day, version in sorted(versions.items())
        if version is not None and passed[day][1].height
    ]
    if kept:
        stamp = [pl.lit(as_of).alias("as_of_load_date"), pl.lit(now).alias("certified_at")]
        writes.insert_aggregate_versions(pl.concat(kept).with_columns(stamp))
    if passed:
        writes.release_queue(sorted(passed), as_of=as_of, now=now, run_id=run_id)
    return versions


def aggregate_checks(
    rows: pl.DataFrame,
    recomputed: pl.DataFrame,
    reconciliation: pl.DataFrame,
    as_of: str,
    first: str,
    certified: set[str],
    *,
    matched: bool = False,
) -> list[CheckOutcome]:
    """The gate of one business date's aggregates computed as of ``as_of``. ``matched``: the
    rows are part of a frame that already matched the schema (``aggregates_matched``)."""
    after = (dt.date.fromisoformat(as_of) + dt.timedelta(days=1)).isoformat()
    schema = schema_matched(rows.height) if matched else _aggregates_schema(rows)
    return [
        schema,
        check_unique_keys({"daily_aggregates": (rows, ["store_id", "business_date"])}),
        check_reconciliation(reconciliation),
        check_totals(_sums(rows), _sums(recomputed)),
        check_completeness(after, first, certified),
        check_non_negative(
            {
                "daily_aggregates": (
                    rows,
                    ["store_id", "business_date"],
                    ["units", "amount_minor", "cost_minor"],
                )
            }
        ),
    ]


def aggregates_matched(candidates: pl.DataFrame) -> bool:
    """Whether a frame of candidate aggregates (any number of business dates) matches the
    schema as a whole, so each date's rows do too."""
    return _aggregates_schema(candidates).passed


def _aggregates_schema(rows: pl.DataFrame) -> CheckOutcome:
    from replay_assets.core.schemas import DAILY_AGGREGATES  # lazily: pandera (core/gate.py)

    return check_schema({"daily_aggregates": (DAILY_AGGREGATES, rows)})


def _sums(rows: pl.DataFrame) -> Controls:
    cols = ("line_count", "order_count", "units", "amount_minor", "cost_minor", "gross_profit_minor")
    return Controls(*(int(rows[c].sum() or 0) for c in cols))


@dataclass(frozen=True)
class Verdict:
    checked: int
    mismatched: list[str]  # partition keys whose publication differs from its recomputation
    reasons: dict[str, str] = field(default_factory=dict)  # key -> what differs (sums, hashes)


def aggregates_verdict(
    latest: pl.DataFrame,
    *,
    horizon: str,
    current: str,
    pending: set[str],
    aggregates: Callable[[str, list[str]], pl.DataFrame],
) -> Verdict:
    """Each business date's newest publication (``latest``: partition key, version, as-of load
    date, content hash), recomputed by the engine (``aggregates``: the candidate aggregates of
    some dates as of a load date) as of its own load date; one published as of a
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
        rows = typed_aggregates(aggregates(str(as_of), dates))
        for key, digest in group.select("partition_key", "content_sha256").iter_rows():
            if content_sha256(rows.filter(pl.col("business_date") == key), AGG_KEY) != digest:
                reasons[str(key)] = f"published rows differ from the recomputation as of {as_of}"
    return Verdict(latest.height, sorted(reasons), reasons)


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
