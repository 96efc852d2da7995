"""The publication is one engine-neutral procedure both adapters run: the module holding it, its
types and the re-verification verdicts loads no engine, so the Spark adapter can hold it without
DuckDB; and on Delta it writes the candidates of all its dates together."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from replay_assets.core.gate import Check
from replay_assets.storage.duckdb_adapter.publish_steps import DuckDBCandidateSteps, DuckDBPublishSteps
from replay_assets.storage.duckdb_adapter.unit import DuckDBWriter
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.storage.publish.procedure import Published, Verdict, aggregates_verdict, publish_aggregates
from replay_assets.storage.rules.published import PUBLISHED
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide, plan_for
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.storage.test_apply_steps_contract import DAY, NOW, _applied, _land_all, _order
from replay_assets_tests.stores import SPARK_KINDS, open_store

_LOADED = (
    "import importlib, sys\n"
    "for name in sys.argv[1:]:\n"
    "    importlib.import_module(name)\n"
    "print(sorted(m for m in ('duckdb', 'pyspark') if m in sys.modules))\n"
)


def test_the_publication_procedure_loads_no_engine() -> None:
    held = {f.__module__ for f in (publish_aggregates, Published, Verdict, aggregates_verdict)}
    found = subprocess.run(
        [sys.executable, "-c", _LOADED, *sorted(held)], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"


WRITTEN = ("publications", "aggregate_versions", "restatement_queue", "partition_status")


def _delta_versions(root: Path, table: str) -> int:
    return len(list((root / table / "_delta_log").glob("*.json")))


@pytest.mark.parametrize("engine", SPARK_KINDS)
def test_publishing_several_dates_on_delta_commits_each_table_once(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    """Each Delta write is a commit (a round trip and a log entry): the passed candidates of all
    the dates are written together, not one commit a date; and the published copy rewrites only
    the tables the publication changed."""
    days = [f"2026-01-0{d}" for d in range(1, 6)]
    lines = [_order(n, f"o{n}", store_id=f"s{n % 2}", business_date=days[n % 5]) for n in range(1, 16)]
    pipeline = Pipeline(settings_for(tmp_path / "plan-home", "2026-01-10T12:00:00Z"))
    write_delivery(pipeline.settings.landing, "erp", DAY, "B1", lines, ready_at=f"{DAY}T01:00:00Z")
    plan = plan_for(decide(pipeline), DAY)
    with open_store(request, engine, tmp_path / engine) as opened:
        _land_all(opened, pipeline)
        _applied(opened, plan, DAY)
        with opened.store.transaction() as unit:
            assert len(unit.publish.refresh_published_copy(tmp_path)) == len(PUBLISHED)
        before = {t: _delta_versions(opened.root, t) for t in WRITTEN}
        with opened.store.transaction() as unit:
            published = unit.publish.publish_aggregates(tmp_path, dates=days, run_id="run-2", now=NOW)
        after = {t: _delta_versions(opened.root, t) for t in WRITTEN}
        with opened.store.transaction() as unit:
            refreshed = unit.publish.refresh_published_copy(tmp_path)
            copy = unit.ops.spark.read.format("delta").load(f"{opened.root}/published/daily_aggregates")
            exported = unit.reports.export_table("daily_aggregates", None).to_dicts()
            assert sorted(unit.ops.rows(copy), key=str) == sorted(exported, key=str) and len(exported) == 10
    assert [p.version for p in published] == [1] * 5 and all(p.certified for p in published)
    assert {t: after[t] - before[t] for t in WRITTEN} == dict.fromkeys(WRITTEN, 1)
    # the publication changed the aggregates and their evidence, not the current state
    assert refreshed == [f"published/{t}" for t in ("daily_aggregates", "partition_status", "publications")]


class _MiscountingCandidates(DuckDBCandidateSteps):
    """The candidate step with one unit too many on its first row: an aggregation defect the
    gate's recomputation, another statement over the same state, must catch."""

    def candidate_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        found = super().candidate_aggregates(dates, as_of=as_of, from_latest=from_latest)
        first = pl.int_range(pl.len()) == 0
        return found.with_columns(pl.when(first).then(pl.col("units") + 1).otherwise(pl.col("units")))


def test_a_miscounted_candidate_fails_the_totals_check_and_is_not_published(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """On the daily path the candidates and the recomputation read the same state (the latest
    tables: no history scan); the recomputation is the order-by-order statement, held to the
    oracle beside the candidates' in ``spark/test_spark_aggregates.py``. A candidate that
    miscounts fails the check and is not published."""
    lines = [_order(n, f"o{n}", store_id="s1", business_date="2026-01-01") for n in range(1, 4)]
    pipeline = Pipeline(settings_for(tmp_path / "plan-home", "2026-01-10T12:00:00Z"))
    write_delivery(pipeline.settings.landing, "erp", DAY, "B1", lines, ready_at=f"{DAY}T01:00:00Z")
    plan = plan_for(decide(pipeline), DAY)
    with open_store(request, "duckdb", tmp_path / "duckdb") as opened:
        _land_all(opened, pipeline)
        _applied(opened, plan, DAY)
        with opened.store.transaction() as unit:
            assert isinstance(unit, DuckDBWriter)
            steps = DuckDBPublishSteps(unit.con)
            assert steps.candidates.latest_holds_as_of(str(steps.candidates.certified_pointer()))
            steps.candidates = _MiscountingCandidates(unit.con)
            (published,) = publish_aggregates(steps, tmp_path, ["2026-01-01"], "run-1", NOW)
    failed = [c for c in published.checks if not c.passed]
    assert [c.check for c in failed] == [Check.TOTALS] and "units" in failed[0].summary
    assert published.version is None and not published.certified
