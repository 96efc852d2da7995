"""Test helpers: settings for a temporary home, a Dagster-free driver of the pipeline."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from replay_assets.core.config import Settings
from replay_assets.core.manifest import parse_instant
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.publish import pending_restatements, publish


def settings_for(home: Path, now: str, **extra: object) -> Settings:
    return Settings(home=home, fixed_now=parse_instant(now, "now"), **extra)  # type: ignore[arg-type]


def drive(pipeline: Pipeline) -> list[str]:
    """Apply every ready load date and publish every queued restatement, like ``run`` does but
    without Dagster; returns what it did, in order."""
    done: list[str] = []
    while len(done) < 1000:  # a loop that does not converge is a bug: fail instead of hanging
        decision = decide(pipeline)
        if decision.next is not None:
            day = decision.next.load_date
            land(pipeline, day)
            done.append(f"apply {day}: {apply(pipeline, day, None).status}")
            continue
        ranges, _ = pending_restatements(pipeline)
        if not ranges:
            return done
        for start, end in ranges:
            publish(pipeline, _days(start, end), None)
            done.append(f"publish {start}..{end}")
    raise AssertionError(f"drive did not converge: {done[-5:]}")


def _days(start: str, end: str) -> list[str]:
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return [(first + dt.timedelta(n)).isoformat() for n in range((last - first).days + 1)]


def warehouse_fingerprint(pipeline: Pipeline) -> str:
    """sha256 of every table's rows (order-free) and of the published copy's files: equal
    fingerprints mean nothing was written to the warehouse or published in between."""
    digest = hashlib.sha256()
    with pipeline.warehouse.connect() as con:
        names = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_type = 'BASE TABLE' ORDER BY 1"
        ).fetchall()
        for (name,) in names:
            rows = sorted(repr(row) for row in con.table(name).fetchall())
            digest.update(f"{name}:{len(rows)}:{rows}".encode())
    published = pipeline.settings.home / "published"
    for path in sorted(published.rglob("*")) if published.exists() else []:
        if path.is_file():
            digest.update(f"{path.relative_to(published)}:".encode() + path.read_bytes())
    return digest.hexdigest()
