"""The sensors' cursors: what the manifest sensor remembers between ticks so a tick reads only
what is new or changed (``core/settled.py``), and where ``replay-assets run`` keeps them (the
warehouse, beside what they describe; under the daemon Dagster keeps them)."""

from __future__ import annotations

from pathlib import Path

from replay_assets.core import settled
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.plan import Delivery, WarehouseFacts
from replay_assets.storage.apply.facts import contiguous_ranges
from replay_assets.storage.landing import area as landing_area
from replay_assets.storage.landing.listing import list_manifests
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import Decision, deliveries_of, load_date_window, plan_deliveries

Entry = tuple[Path, str | None, settled.Listed]


def cursor(pipeline: Pipeline, sensor: str) -> str | None:
    with pipeline.store.connect() as unit:
        return unit.evidence.sensor_cursor(sensor)


def save_cursor(pipeline: Pipeline, sensor: str, cursor: str) -> None:
    with pipeline.store.transaction() as unit:
        unit.evidence.save_sensor_cursor(sensor, cursor)


def sense(pipeline: Pipeline, previous: str | None, timeout: float | None = 0) -> tuple[Decision, str]:
    """The manifest sensor's decision and its next cursor. Reads the last committed state through
    the reader (never the writer lock: a running load never makes a tick skip) and parses only
    the manifests of load dates the cursor does not hold as settled: a tick costs what is new or
    changed, not every delivery ever made. Every date that is not settled is planned exactly as
    a full read plans it; a settled one plans as APPLIED."""
    with pipeline.store.read(timeout) as unit:
        facts = unit.apply.warehouse_facts()
    settings = pipeline.settings
    entries = list_manifests(settings.landing)
    listing = [e for _, _, e in entries]
    depends = [repr(settings.limits), settings.sources, settings.load_date_start, sorted(facts.skipped)]
    config = sha256_text(canonical_json(depends))
    keep = settled.still_settled(settled.read_cursor(previous, config), listing, facts.applied)
    decision, deliveries = _decide_unsettled(pipeline, facts, entries, keep)
    read = {d.batch_id for d in deliveries}
    if keep and any(b not in read for d in deliveries for b in d.supersedes):
        keep = frozenset()  # it may supersede a batch of a settled date: read everything
        decision, deliveries = _decide_unsettled(pipeline, facts, entries, keep)
    now_settled = keep | _newly_settled(pipeline, facts, decision, deliveries=deliveries, listing=listing)
    months = settled.month_digests(now_settled, listing, facts.applied)
    state = settled.SettledCursor(config, now_settled, months)
    return decision, settled.write_cursor(state, contiguous_ranges(sorted(now_settled)))


def _decide_unsettled(
    pipeline: Pipeline, facts: WarehouseFacts, entries: list[Entry], keep: frozenset[str]
) -> tuple[Decision, list[Delivery]]:
    settings = pipeline.settings
    to_read = [(path, problem) for path, problem, e in entries if e.load_date not in keep]
    seen = landing_area.scan_paths(to_read, settings.limits)
    deliveries, _ = deliveries_of(pipeline, seen)
    sources = settings.sources
    if sources is None:  # each source's first date, the settled dates no tick reads included
        first, last = load_date_window(pipeline)
        found = [(e.source, e.load_date) for _, _, e in entries if e.load_date in keep]
        found += [(d.source, d.load_date) for d in deliveries if first <= d.load_date <= last]
        sources = settled.derived_starts(found)
    return plan_deliveries(pipeline, facts, seen, deliveries=deliveries, sources=sources), deliveries


def _newly_settled(
    pipeline: Pipeline,
    facts: WarehouseFacts,
    decision: Decision,
    deliveries: list[Delivery],
    listing: list[settled.Listed],
) -> set[str]:
    """Dates read this tick that are now settled. The newest delivered date never is: it bounds
    which dates without a delivery are MISSING rather than WAITING."""
    first, last = load_date_window(pipeline)
    newest = max((e.load_date for e in listing if first <= e.load_date <= last), default="")
    by_day: dict[str, list[Delivery]] = {}
    for d in deliveries:
        by_day.setdefault(d.load_date, []).append(d)
    return {
        p.load_date
        for p in decision.plans
        if p.load_date != newest
        and p.load_date in by_day
        and settled.is_settled(p, by_day[p.load_date], facts.applied, facts.landed)
    }
