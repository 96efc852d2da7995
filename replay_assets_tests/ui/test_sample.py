"""What a newcomer sees after ``replay-assets ui`` on an empty home: the sample (a week of
deliveries up to today) applied by real sensor ticks, its incident found by the re-verification
and repaired by a real backfill. One sample UI for the module (the real command as a child
process group); each fact is asserted through the webserver's GraphQL API (no browser), then in
Debian's Chromium with a screenshot for docs/ui.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from replay_assets.demo.incident import OPERATOR, repair_note
from replay_assets.demo.sample import INCIDENT_INDEX
from replay_assets_tests.ui import sample_ui as ui
from replay_assets_tests.ui.conftest import CHROMIUM
from replay_assets_tests.ui.dagster_dev import DagsterDev
from replay_assets_tests.ui.test_browser import AUDIT, shot

LOAD_DATE_ASSETS = ("raw_receipts", "current_orders")
GATED = ("raw_receipts", "current_orders", "daily_aggregates")
WITHOUT_CHROMIUM = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing")


@pytest.fixture(scope="module")
def sample_ui(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[DagsterDev]:
    """``replay-assets ui`` on an empty home (the real clock, the sample's own settings), once
    its sample is played."""
    home = tmp_path_factory.mktemp("sample") / "home"
    with DagsterDev(home, artifacts / "sample-ui.log", {}, sample=True).running() as server:
        ui.wait_played(server)
        yield server


@pytest.fixture
def sample_page(browser: Browser, sample_ui: DagsterDev) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1600, "height": 1200}, base_url=sample_ui.url)
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def incident_date(server: DagsterDev) -> str:
    return ui.delivered_load_dates(server.home)[INCIDENT_INDEX]


# --- through GraphQL, no browser ---------------------------------------------------------------


def test_the_sensors_runs_are_listed_by_the_ticks_that_launched_them(sample_ui: DagsterDev) -> None:
    loads = ui.delivered_load_dates(sample_ui.home)
    for sensor in ("source_manifest_sensor", "restatement_sensor"):
        ticked = {run for tick in ui.sensor_ticks(sample_ui, sensor) for run in tick["runIds"]}
        runs = ui.runs_tagged(sample_ui, "dagster/sensor_name", sensor)
        assert runs and {r["runId"] for r in runs} == ticked, sensor
        assert {r["status"] for r in runs} == {"SUCCESS"}, sensor
    applied = ui.runs_tagged(sample_ui, "dagster/sensor_name", "source_manifest_sensor")
    assert sorted(ui.tags_of(r)["dagster/partition"] for r in applied) == loads  # every date, once


def test_the_repair_is_a_real_backfill_of_the_incident_date(sample_ui: DagsterDev) -> None:
    found = ui.backfills(sample_ui)
    assert len(found) == 1
    repair = found[0]
    assert repair["partitionNames"] == [incident_date(sample_ui)]
    opened = sample_ui.graphql(  # what the backfill's page reads (a GraphQL error fails here)
        "query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename ... on "
        "PartitionBackfill { id status numPartitions partitionStatuses { results { partitionName "
        "runStatus } } } } }",
        {"id": repair["id"]},
    )["partitionBackfillOrError"]
    assert opened["__typename"] == "PartitionBackfill"
    runs = ui.runs_tagged(sample_ui, "dagster/backfill", repair["id"])
    assert runs and {r["status"] for r in runs} == {"SUCCESS"}
    assert {ui.tags_of(r)["replay/lane"] for r in runs} == {"backfill"}


def test_the_backfill_shows_the_operators_note(sample_ui: DagsterDev) -> None:
    repair = ui.backfills(sample_ui)[0]
    note = repair_note(incident_date(sample_ui))
    assert note in (repair["title"] or "", repair["description"] or "")


def test_most_partitions_are_filled(sample_ui: DagsterDev) -> None:
    for asset in (*LOAD_DATE_ASSETS, "daily_aggregates"):
        stats = ui.partition_stats(sample_ui, asset)
        assert stats["numFailed"] == 0, asset
        assert stats["numMaterialized"] / stats["numPartitions"] > 0.5, (asset, stats)


def test_the_incident_is_a_failed_then_passed_re_verification(sample_ui: DagsterDev) -> None:
    statuses = [e["status"] for e in reversed(ui.check_executions(sample_ui, "current_orders", AUDIT))]
    assert "FAILED" in statuses and statuses[-1] == "SUCCEEDED"  # found, then cleared by the repair


def test_the_failed_re_verification_names_its_reason(sample_ui: DagsterDev) -> None:
    executions = ui.check_executions(sample_ui, "current_orders", AUDIT)
    failed = [e for e in executions if e["status"] == "FAILED"]
    assert failed and incident_date(sample_ui) in (failed[0]["evaluation"]["description"] or "")


def test_every_gate_check_is_partitioned_with_one_evaluation_per_partition(sample_ui: DagsterDev) -> None:
    for asset in GATED:
        gate = [c["name"] for c in ui.asset_checks(sample_ui, asset) if c["blocking"]]
        assert gate, f"{asset} has no gate checks"
        for check in gate:
            spec = next(c for c in ui.asset_checks(sample_ui, asset) if c["name"] == check)
            assert spec["partitionDefinition"] is not None, (asset, check)
            executions = ui.check_executions(sample_ui, asset, check)
            assert executions and all(e["partition"] for e in executions), (asset, check)
            per_run = [(e["runId"], e["partition"]) for e in executions]
            assert len(per_run) == len(set(per_run)), (asset, check)  # one per partition and run


def test_native_tables_plots_column_schema_and_kinds(sample_ui: DagsterDev) -> None:
    for asset in ("current_orders", "daily_aggregates"):
        definition = ui.asset_definition(sample_ui, asset)
        assert definition["kinds"], asset
        schema = {e["label"]: e["__typename"] for e in definition["metadataEntries"]}
        assert schema.get("dagster/column_schema") == "TableSchemaMetadataEntry", asset
        found = ui.materializations(sample_ui, asset)
        numbers = ("IntMetadataEntry", "FloatMetadataEntry")
        numeric = [{e["label"] for e in m["metadataEntries"] if e["__typename"] in numbers} for m in found]
        assert numeric and all(numeric), asset  # every partition's materialization plots figures
    daily = ui.materializations(sample_ui, "daily_aggregates")
    tables = [e for m in daily for e in m["metadataEntries"] if e["__typename"] == "TableMetadataEntry"]
    assert tables and all(t["table"]["schema"]["columns"] for t in tables)


# --- in Debian's Chromium ----------------------------------------------------------------------


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_the_sensor_page_lists_the_runs_of_its_ticks(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    page = sample_page
    page.goto(f"/locations/{ui.LOCATION}/sensors/source_manifest_sensor")
    page.get_by_role("button", name="Runs", exact=True).click()  # the runs its ticks launched
    for run in ui.runs_tagged(sample_ui, "dagster/sensor_name", "source_manifest_sensor"):
        link = page.locator(f'a[href="/runs/{run["runId"]}"]')
        row = page.locator("div").filter(has=link).filter(has_text="source_manifest_sensor").last
        expect(row).to_contain_text("Success", timeout=15_000)
        expect(row).to_contain_text(f"partition: {ui.tags_of(run)['dagster/partition']}")
    shot(page, artifacts, "sample-01-source_manifest_sensor-ticks-and-their-runs")
    page.goto("/runs")
    expect(page.get_by_text("restatement_sensor").first).to_be_visible(timeout=15_000)
    expect(page.get_by_text("source_manifest_sensor").first).to_be_visible()
    shot(page, artifacts, "sample-02-runs-launched-by-the-sensors")


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_the_backfills_page_opens_the_repair(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    page = sample_page
    repair = ui.backfills(sample_ui)[0]
    page.goto("/overview/backfills")
    expect(page.locator(f'a[href*="{repair["id"]}"]').first).to_be_visible(timeout=15_000)
    page.goto(f"/runs/b/{repair['id']}?tab=runs")
    expect(page.get_by_text(incident_date(sample_ui)).first).to_be_visible(timeout=15_000)
    expect(page.get_by_text("Success").first).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("Unexpected GraphQL error")
    shot(page, artifacts, "sample-03-the-repair-backfill")


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_the_backfills_list_shows_the_repairs_operator_and_note(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    """Dagster 1.13.27's UI shows no backfill's title or description (neither the backfill
    page's nor the backfills list's query asks for them; the note is in GraphQL, asserted
    above). It shows the backfill's tags: who launched the repair, its lane, and the note."""
    page = sample_page
    repair = ui.backfills(sample_ui)[0]
    day = incident_date(sample_ui)
    page.goto("/runs?view=backfills")
    link = page.locator(f'a[href="/runs/b/{repair["id"]}"]')
    row = page.locator("div").filter(has=link).filter(has_text="1 partition").last
    shown = (f"replay/operator: {OPERATOR}", "replay/lane: backfill", f"replay/note: {repair_note(day)}")
    for text in (*shown, "current_orders", "Success"):
        expect(row).to_contain_text(text, timeout=15_000)
    shot(page, artifacts, "sample-09-backfills-list-the-repair-its-operator-and-note")
    page.goto(f"/runs/b/{repair['id']}")
    expect(page.get_by_text(f"{day}...{day}")).to_be_visible(timeout=15_000)  # partition selection


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_partitions_are_filled(sample_page: Page, artifacts: Path) -> None:
    page = sample_page
    page.goto("/assets/current_orders?view=partitions")
    expect(page.get_by_text("Materialized (7)")).to_be_visible(timeout=15_000)
    shot(page, artifacts, "sample-04-current_orders-partitions-filled")


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_the_incident_failed_then_passed(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    page = sample_page
    page.goto(f"/assets/current_orders?view=checks&checkDetail={AUDIT}")
    page.get_by_role("tab", name="Execution history").click()
    rows = page.locator("tbody tr")
    expect(rows.first).to_contain_text("Passed", timeout=15_000)  # the newest: after the repair
    expect(rows.filter(has_text="Failed").first).to_be_visible()  # the corrupted record, before
    shot(page, artifacts, "sample-05-current_orders-re-verification-failed-then-passed")


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_gate_checks_show_their_partitions(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    page = sample_page
    page.goto("/assets/current_orders?view=checks&checkDetail=has_unique_keys")
    page.get_by_role("tab", name="Execution history").click()
    for day in ui.delivered_load_dates(sample_ui.home):
        expect(page.locator("tr").filter(has_text=day).first).to_be_visible(timeout=10_000)
    shot(page, artifacts, "sample-06-current_orders-gate-check-per-partition")


PLOTTED = ("dagster/row_count", "amount_minor", "rejected", "slo_freshness_minutes")


@pytest.mark.browser
@WITHOUT_CHROMIUM
def test_browser_plots_and_tables(sample_page: Page, sample_ui: DagsterDev, artifacts: Path) -> None:
    """The asset's plots are on its Overview tab: the Metadata section's Plots button draws one
    chart.js canvas per numeric metadata label, by partition for a partitioned asset (there is
    no plots tab or view in 1.13.27). Tables render as HTML tables in the Metadata section."""
    page = sample_page
    page.goto("/assets/current_orders")
    page.get_by_role("button", name="Plots").click()
    for label in PLOTTED:
        chart = page.locator(f"xpath=//span[text()='{label}']/../following-sibling::div//canvas")
        expect(chart).to_be_visible(timeout=15_000)
    expect(page.get_by_text("When graphing values by partition")).to_be_visible()
    shot(page, artifacts, "sample-07-current_orders-plots")
    page.goto("/assets/daily_aggregates")
    row = page.locator("tr").filter(has=page.get_by_text("daily_totals", exact=True)).last
    expect(row.locator("table th")).to_have_text(
        ["business_date", "order_count", "amount_minor", "gross_profit_minor"], timeout=15_000
    )
    newest = ui.materializations(sample_ui, "daily_aggregates")[0]["partition"]
    expect(row.locator("table tbody tr")).to_have_count(1)  # its own business date only
    expect(row.locator("table tbody td").first).to_have_text(newest)
    row.scroll_into_view_if_needed()
    shot(page, artifacts, "sample-08-daily_aggregates-daily_totals-table")
