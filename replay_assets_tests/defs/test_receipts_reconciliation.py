"""``raw_receipts``' own reconciliation check: read back from the warehouse once the landing
committed, per delivered file, the events its manifest declares = the receipts kept = staged
source events + rejected events + lines the schema gate refused. One evaluation per load date;
a landed row lost from the warehouse fails it, naming the batch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from replay_assets.core.manifest import Limits
from replay_assets.core.receipts import FileCounts, LandedCounts, reconcile_receipts
from replay_assets.definitions import build_definitions
from replay_assets.demo.scenarios import seed001, seed002
from replay_assets.storage.landing import area
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.storage.test_landing_contract import CTX, LINES, NOW
from replay_assets_tests.stores import SPARK_KINDS, open_store

CHECK = dg.AssetCheckKey(dg.AssetKey("raw_receipts"), "reconciliation_adds_up")
CDC_BATCH = "B20260921-CDC-A"


class Home:
    def __init__(self, tmp_path: Path, now: str, **extra: object) -> None:
        self.settings = settings_for(tmp_path, now, **extra)
        self.defs = build_definitions(self.settings)
        self.instance = dg.DagsterInstance.ephemeral()

    def run(self, load_date: str, *, land_only: bool = False) -> dg.ExecuteInProcessResult:
        job = self.defs.resolve_job_def("apply_load_date_job")
        selection = [dg.AssetKey("raw_receipts")] if land_only else None
        return job.execute_in_process(
            partition_key=load_date, instance=self.instance, asset_selection=selection, raise_on_error=False
        )

    def evaluation(self, run: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
        """The check's one evaluation in ``run``, after asserting the instance recorded exactly one
        execution of it for the run (no "Skipped" row beside it)."""
        history = self.instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=100)
        [execution] = [r for r in history if r.run_id == run.run_id]
        [found] = [e for e in run.get_asset_check_evaluations() if e.asset_check_key == CHECK]
        assert execution.partition == found.partition
        return found

    def reconciliation(self, batch_id: str) -> tuple[int, int, int, int, int]:
        with Pipeline(self.settings).warehouse.connect() as con:
            [row] = con.execute(
                "SELECT source_events, accepted, rejected, skipped_duplicate, skipped_stale "
                "FROM reconciliation WHERE batch_id = ?",
                [batch_id],
            ).fetchall()
        return row


@pytest.fixture
def seed001_home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path, seed001.NOW, load_date_start="2026-09-15", business_date_start="2026-09-15")
    yield home
    home.instance.dispose()


@pytest.fixture
def seed002_home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path, seed002.NOW)
    yield home
    home.instance.dispose()


def _declared(manifest: Path) -> int:
    return sum(f["events"] for f in json.loads(manifest.read_text())["files"])


def _numbers(evaluation: dg.AssetCheckEvaluation) -> dict[str, object]:
    return {k: getattr(v, "value", v) for k, v in evaluation.metadata.items()}


@pytest.mark.slow  # two load dates landed and applied through Dagster
def test_each_landed_load_date_reconciles_once_duplicates_counted_as_the_fold_counts_them(
    seed001_home: Home,
) -> None:
    landing = seed001_home.settings.landing
    manifests = {
        seed001.BASELINE_DATE: seed001.deliver_baseline(landing),
        seed001.CDC_DATE: seed001.deliver_cdc(landing, CDC_BATCH, seed001.CDC_DATE, "2026-09-21T08:00:00Z"),
    }
    for day, manifest in manifests.items():
        run = seed001_home.run(day)
        assert run.success, day
        evaluation = seed001_home.evaluation(run)
        numbers = _numbers(evaluation)
        assert evaluation.passed and evaluation.partition == day
        assert evaluation.severity is dg.AssetCheckSeverity.ERROR and not evaluation.blocking
        assert numbers["declared_events"] == numbers["receipts"] == _declared(manifest) > 0
        assert (numbers["staged"], numbers["rejected"], numbers["refused"]) == (_declared(manifest), 0, 0)
        assert (numbers["batches"], numbers["files"], numbers["unbalanced_files"]) == (1, 1, 0)
        assert "add up" in str(evaluation.description)
    # the CDC batch delivers e201 and e202 twice: landing stages every line, the fold then counts
    # the second copies as duplicates, and both reconciliations agree on the same lines
    source_events, accepted, rejected, duplicate, stale = seed001_home.reconciliation(CDC_BATCH)
    assert duplicate == 2 and source_events == _declared(manifests[seed001.CDC_DATE])
    assert accepted + duplicate + stale == numbers["staged"] and rejected == numbers["rejected"]


@pytest.mark.parametrize(
    ("table", "tampered", "intact"),
    [
        ("staged_rows", "POS-1002", "POS-2026-10-02"),  # a source event DuckDB's JSON path staged
        ("rejected_events", "POS-2026-10-02", "POS-1002"),  # a rejected line's evidence
    ],
)
def test_a_landed_row_lost_from_the_warehouse_fails_the_check_naming_its_batch(
    seed002_home: Home, table: str, tampered: str, intact: str
) -> None:
    landing, day = seed002_home.settings.landing, seed002.FIRST_DAY
    seed002.deliver_shuffled(landing)  # POS-1002: nine events
    seed002.deliver_unbalanced_day(landing, day)  # POS-2026-10-02: one malformed line
    landed = seed002_home.run(day, land_only=True)
    assert landed.success and seed002_home.evaluation(landed).passed
    assert _numbers(seed002_home.evaluation(landed))["rejected"] == 1

    # the fault: one landed row of the batch deleted in the warehouse file, as an outsider would
    con = duckdb.connect(str(seed002_home.settings.home / "warehouse.duckdb"))
    try:
        lowest = f"SELECT min(line_number) FROM {table} WHERE batch_id = ?"
        [(line,)] = con.execute(lowest, [tampered]).fetchall()
        assert line is not None  # the batch has a row there to lose
        con.execute(f"DELETE FROM {table} WHERE batch_id = ? AND line_number = ?", [tampered, line])
    finally:
        con.close()

    run = seed002_home.run(day)
    failed = seed002_home.evaluation(run)
    numbers = _numbers(failed)
    assert not failed.passed and failed.partition == day
    assert f"batch {tampered} " in str(failed.description) and intact not in str(failed.description)
    assert numbers["unbalanced_batches"] == tampered and numbers["unbalanced_files"] == 1
    assert numbers["declared_events"] == numbers["receipts"] == 10
    assert int(str(numbers["staged"])) + int(str(numbers["rejected"])) == 9
    # not blocking: the landing step succeeds and the apply's gate refuses the date
    assert run.is_node_success("raw_receipts") and not run.success
    gate = [e for e in run.get_asset_check_evaluations() if e.asset_key == dg.AssetKey("current_orders")]
    assert [e.passed for e in gate if e.check_name == "reconciliation_adds_up"] == [False]


def test_a_pruned_date_passes_on_what_it_keeps_and_an_extra_receipt_does_not_add_up() -> None:
    kept = FileCounts("B1", "b1.jsonl", declared=4, receipts=0, staged=0, rejected=1, refused=0)
    pruned = reconcile_receipts(LandedCounts("2026-01-02", (kept,), pruned=True))
    assert pruned.passed and "pruned" in pruned.summary() and pruned.declared == 4
    extra = FileCounts("B2", "b2.jsonl", declared=4, receipts=5, staged=3, rejected=1, refused=0)
    empty = FileCounts("B3", None, declared=0, receipts=0, staged=0, rejected=0, refused=0)
    verdict = reconcile_receipts(LandedCounts("2026-01-02", (extra, empty)))
    assert not verdict.passed and (verdict.batches, verdict.files) == (2, 1)
    assert "batch B2 file b2.jsonl: manifest declares 4 events, 5 receipts" in verdict.summary()


@pytest.mark.slow  # a real Sail server
@pytest.mark.parametrize("engine", SPARK_KINDS)
def test_both_engines_count_the_same_landed_rows(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    write_delivery(tmp_path / "landing", "erp", "2026-01-02", "B1", LINES, ready_at="2026-01-02T01:00:00Z")
    [seen] = [s for s in area.scan(tmp_path / "landing", Limits()) if s.manifest is not None]
    assert seen.manifest is not None
    files = area.delivery_files(seen.path.parent, seen.manifest)
    found = {}
    for kind in ("duckdb", engine):
        with open_store(request, kind, tmp_path / kind) as opened:
            with opened.store.transaction() as unit:
                unit.landing.land_batch(seen.manifest, files=files, ctx=CTX, now=NOW)
            with opened.store.read() as unit:
                found[kind] = unit.landing.landed_counts("2026-01-02")
    assert found[engine] == found["duckdb"]
    [marker, counted] = found["duckdb"].files  # the batch, then its one file
    assert (marker.batch_id, marker.source_file, marker.declared) == ("B1", None, 0)
    # every tier decided a line (the grammar, DuckDB's JSON path, the oracle); one blank line
    assert (counted.declared, counted.receipts) == (18, 18)
    assert (counted.staged, counted.rejected, counted.refused) == (12, 5, 1)
