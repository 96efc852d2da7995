"""The publish gate: pure predicates over exactly the candidate's state.

Each predicate checks one property and returns metadata a person can act on — counts, sums and
the failing keys (at most a few), never whole rows or values.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from replay_assets.core.aggregate import Controls

if TYPE_CHECKING:  # pandera is imported where a schema is checked: a costly import
    import pandera.polars as pa

MAX_KEYS = 5


class Check(enum.StrEnum):
    """Check names read as predicates (they are the Dagster asset-check names)."""

    SCHEMA = "matches_schema"
    UNIQUE_KEYS = "has_unique_keys"
    RECONCILIATION = "reconciliation_adds_up"
    TOTALS = "totals_match_recomputation"
    COMPLETENESS = "upstream_load_dates_certified"
    NON_NEGATIVE = "amounts_are_non_negative"


@dataclass(frozen=True)
class CheckOutcome:
    check: Check
    passed: bool
    summary: str
    metadata: Mapping[str, str | int] = field(default_factory=dict)


def outcome_record(o: CheckOutcome) -> dict[str, Any]:
    """A check verdict as a JSON-ready record (what the journal and publications keep)."""
    return {"check": o.check.value, "passed": o.passed, "summary": o.summary, "metadata": dict(o.metadata)}


def outcome_from_record(r: Mapping[str, Any]) -> CheckOutcome:
    return CheckOutcome(Check(r["check"]), r["passed"], r["summary"], r["metadata"])


def all_passed(outcomes: Sequence[CheckOutcome]) -> bool:
    return all(o.passed for o in outcomes)


def failures(outcomes: Sequence[CheckOutcome]) -> str:
    """One line naming every failed check and why (the candidate's reason)."""
    return "; ".join(f"{o.check}: {o.summary}" for o in outcomes if not o.passed)


def combine(parts: Sequence[CheckOutcome]) -> CheckOutcome:
    """One verdict from a check's verdicts over consecutive parts of a streamed snapshot: it
    passes when every part passes; counts add up; the first failure is named."""
    failed = [p for p in parts if not p.passed]
    metadata: dict[str, str | int] = {}
    for part in failed or parts:
        for name, value in part.metadata.items():
            if isinstance(value, int) and not isinstance(value, bool):
                metadata[name] = int(metadata.get(name, 0)) + value
            else:
                metadata.setdefault(name, value)
    summary = failed[0].summary if failed else parts[0].summary
    if len(failed) > 1:
        summary += f" (and in {len(failed) - 1} more parts)"
    return CheckOutcome(parts[0].check, not failed, summary, metadata)


def _keys_text(frame: pl.DataFrame, keys: Sequence[str]) -> str:
    rows = frame.select(keys).head(MAX_KEYS).rows()
    return ", ".join("|".join(str(v) for v in row) for row in rows)


def check_schema(frames: Mapping[str, tuple[pa.DataFrameSchema, pl.DataFrame]]) -> CheckOutcome:
    """Every table matches its pandera schema (types, ids, ranges, closed sets)."""
    import pandera.polars as pa  # lazily: see the TYPE_CHECKING import

    broken: list[str] = []
    count = 0
    for name, (schema, frame) in frames.items():
        try:
            schema.validate(frame, lazy=True)
        except pa.errors.SchemaErrors as errors:
            cases = errors.failure_cases
            count += cases.height
            broken += [
                f"{name}.{c}: {k}"
                for c, k in cases.select("column", "check")
                .unique()
                .sort("column", "check")
                .head(MAX_KEYS)
                .rows()
            ]
    if not broken:
        return schema_matched(sum(f.height for _, f in frames.values()))
    return CheckOutcome(
        Check.SCHEMA,
        False,
        f"{count} failing cells ({', '.join(broken)})",
        {"failing_cells": count, "failing_checks": ", ".join(broken)},
    )


def schema_matched(rows: int) -> CheckOutcome:
    """The schema check's verdict on ``rows`` rows that match. The schemas' checks are per cell
    (types, patterns, ranges, closed sets), so every subset of a matching frame matches: a
    caller that validated a whole frame gives each part of it this verdict without validating
    the part again (pandera's cost is mostly per call, not per row)."""
    return CheckOutcome(Check.SCHEMA, True, "all columns match", {"rows": rows})


def check_unique_keys(frames: Mapping[str, tuple[pl.DataFrame, Sequence[str]]]) -> CheckOutcome:
    """No key appears twice in any table."""
    dupes = {
        name: f.filter(f.select(k).is_duplicated()).unique(list(k), maintain_order=True)
        for name, (f, k) in frames.items()
    }
    bad = {name: d for name, d in dupes.items() if d.height}
    if not bad:
        return CheckOutcome(
            Check.UNIQUE_KEYS, True, "every key once", {"rows": sum(f.height for f, _ in frames.values())}
        )
    keys = "; ".join(f"{name}: {_keys_text(d, frames[name][1])}" for name, d in bad.items())
    return CheckOutcome(
        Check.UNIQUE_KEYS,
        False,
        f"duplicate keys {keys}",
        {"duplicate_keys": sum(d.height for d in bad.values()), "keys": keys},
    )


def check_reconciliation(batches: pl.DataFrame) -> CheckOutcome:
    """Per batch: source_events = accepted + rejected + skipped_duplicate + skipped_stale."""
    parts = pl.col("accepted") + pl.col("rejected") + pl.col("skipped_duplicate") + pl.col("skipped_stale")
    bad = batches.filter(pl.col("source_events") != parts)
    totals = {
        c: int(batches[c].sum() or 0)
        for c in ("source_events", "accepted", "rejected", "skipped_duplicate", "skipped_stale")
    }
    if not bad.height:
        return CheckOutcome(Check.RECONCILIATION, True, f"{totals['source_events']} events add up", totals)
    ids = _keys_text(bad, ["batch_id"])
    return CheckOutcome(
        Check.RECONCILIATION,
        False,
        f"{bad.height} batches do not add up ({ids})",
        {**totals, "unbalanced_batches": ids},
    )


def check_totals(candidate: Controls, recomputed: Controls) -> CheckOutcome:
    """The candidate's controls equal an independent recomputation (another statement, or another
    path to the state)."""
    names = ("active_lines", "distinct_orders", "units", "amount_minor", "cost_minor", "gross_profit_minor")
    diff = [n for n, a, b in zip(names, candidate.as_tuple(), recomputed.as_tuple(), strict=True) if a != b]
    meta: dict[str, str | int] = {
        f"candidate_{n}": v for n, v in zip(names, candidate.as_tuple(), strict=True)
    }
    meta.update({f"recomputed_{n}": v for n, v in zip(names, recomputed.as_tuple(), strict=True)})
    if not diff:
        return CheckOutcome(Check.TOTALS, True, "controls equal the recomputation", meta)
    return CheckOutcome(Check.TOTALS, False, f"differs in {', '.join(diff)}", meta)


def check_completeness(as_of: str, first: str, certified: set[str]) -> CheckOutcome:
    """Every load date from the first through the day before ``as_of`` is applied and certified."""
    start, end = dt.date.fromisoformat(first), dt.date.fromisoformat(as_of)
    needed = [(start + dt.timedelta(n)).isoformat() for n in range((end - start).days)]
    missing = [d for d in needed if d not in certified]
    if not missing:
        return CheckOutcome(
            Check.COMPLETENESS,
            True,
            f"{len(needed)} upstream load dates certified",
            {"upstream_load_dates": len(needed)},
        )
    return CheckOutcome(
        Check.COMPLETENESS,
        False,
        f"MISSING_UPSTREAM_LOAD_DATE {missing[0]}",
        {"missing": len(missing), "first_missing": missing[0]},
    )


def check_non_negative(
    frames: Mapping[str, tuple[pl.DataFrame, Sequence[str], Sequence[str]]],
) -> CheckOutcome:
    """No amount, cost, quantity or unit is negative (keys of offending rows are named)."""
    found = []
    for name, (frame, keys, cols) in frames.items():
        bad = frame.filter(pl.any_horizontal([pl.col(c) < 0 for c in cols]))
        if bad.height:
            found.append(f"{name}: {bad.height} rows ({_keys_text(bad, keys)})")
    if not found:
        return CheckOutcome(Check.NON_NEGATIVE, True, "no negative amounts")
    return CheckOutcome(Check.NON_NEGATIVE, False, "; ".join(found), {"offending": "; ".join(found)})
