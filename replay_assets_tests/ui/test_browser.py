"""The Dagster UI end to end (issue 7): Debian's Chromium, driven by Playwright, against
``dagster dev`` (webserver and daemon) on loopback with temporary homes.

The tests share one server and run in file order, each building on the state the previous one
left, as an operator's session would: the graph; a delivery picked up by the sensor; one
partition materialized from the UI; a backfill from the backfill dialog; a failed candidate.
Outcomes are asserted on the instance and in the page; screenshots go to ``$REPLAY_ASSETS_ARTIFACTS``.
"""

import re
from collections.abc import Iterable
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml
from playwright.sync_api import Page, expect

from replay_assets.defs.evidence import SERVICE_LEVELS_CHECK
from replay_assets.demo.scenarios import seed001
from replay_assets_tests.ui.conftest import CHROMIUM
from replay_assets_tests.ui.dagster_dev import DagsterDev, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does) to run the browser tests",
    ),
]

ASSETS = ("raw_receipts", "current_orders", "current_customers", "daily_aggregates")
GATE = (
    "matches_schema",
    "has_unique_keys",
    "reconciliation_adds_up",
    "totals_match_recomputation",
    "upstream_load_dates_certified",
    "amounts_are_non_negative",
)
AUDIT = "publications_match_recomputation"
LOCATION = "replay_assets.definitions"
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
IN_PROGRESS = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED}
RUN_TIMEOUT = 120


def shot(page: Page, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"{name}.png"), animations="disabled")  # dialogs fade in


def finished(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRun | None:
    run = instance.get_run_by_id(run_id)
    return run if run is not None and run.status in DONE else None


def check_evaluations(instance: dg.DagsterInstance, run_id: str) -> dict[str, dg.AssetCheckEvaluation]:
    """The asset check results a run reported, by check name."""
    found = {}
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        assert entry.dagster_event is not None
        evaluation = entry.dagster_event.event_specific_data
        assert isinstance(evaluation, dg.AssetCheckEvaluation)
        found[evaluation.check_name] = evaluation
    return found


def assert_gate_passed(evaluations: dict[str, dg.AssetCheckEvaluation]) -> None:
    assert set(GATE) <= set(evaluations), sorted(evaluations)
    assert {name: evaluations[name].passed for name in GATE} == dict.fromkeys(GATE, True)


def launch_from_partitions_dialog(page: Page, opener: str, selection: str, launch: str) -> str:
    """Open the launch dialog with ``opener``, type ``selection`` into its partition box, press
    ``launch``; returns the link of the toast that confirms it (a run or a backfill page)."""
    page.get_by_role("button", name=opener).click()
    dialog = page.get_by_role("dialog")
    box = dialog.locator("input[type='text']")  # the partition range box
    show_all = dialog.get_by_role("button", name="Show all partitions")
    # The dialog opens on the last 90 days of a date-partitioned asset and, in the same render
    # as the box, says so with "Show all partitions" when older partitions exist (Dagster's
    # LaunchAssetChoosePartitionsDialog). Wait for the box, then ask: a bare count() at the
    # click raced the dialog's first render. Showing all leaves the "All" range chosen; "Custom"
    # makes the box editable again, over every partition.
    expect(box).to_be_visible(timeout=30_000)
    if show_all.is_visible():
        show_all.click()
        dialog.get_by_text("Custom", exact=True).click()
    box.fill(selection)
    box.press("Enter")
    dialog.get_by_role("button", name=launch).click()
    toast = page.locator("a[href^='/runs/']").filter(has_text="View").first  # "Launched run … View"
    expect(toast).to_be_visible()
    href = toast.get_attribute("href")
    assert href, "the launch toast has no link"
    return href


def show_check_results(page: Page, run_id: str, passed: Iterable[str]) -> None:
    """The run's page with its event log filtered to asset check results; each of ``passed``
    must read as succeeded (a range run reports each partition's evaluation) and none as failed."""
    page.set_viewport_size({"width": 1600, "height": 2000})  # room for all eight results
    page.goto(f"/runs/{run_id}")
    log_filter = page.get_by_placeholder("Filter…")
    log_filter.fill("type:ASSET_CHECK_EVALUATION")
    log_filter.press("Enter")
    for name in passed:
        expect(
            page.get_by_text(re.compile(rf"Check {name} succeeded for materialization of")).first
        ).to_be_visible()
        expect(page.get_by_text(re.compile(rf"Check {name} failed"))).to_have_count(0)


def test_the_asset_graph_shows_the_lineage_and_its_checks(
    page: Page, dagster_ui: DagsterDev, artifacts: Path
) -> None:
    page.goto(
        f"/locations/{LOCATION}/asset-groups/replay"
    )  # the pipeline's group (the consumer example has its own)
    boxes = {}
    for asset in ASSETS:
        node = page.locator(f'[data-tooltip="{asset}"]')
        expect(node).to_be_visible()
        boxes[asset] = node.bounding_box()
    # the graph is laid out left to right along its edges
    x = {asset: box["x"] for asset, box in boxes.items() if box}
    assert x["raw_receipts"] < x["current_orders"] < x["daily_aggregates"]
    assert x["current_customers"] > x["raw_receipts"]
    nodes = dagster_ui.graphql("{ assetNodes { assetKey { path } dependencyKeys { path } } }")["assetNodes"]
    deps = {n["assetKey"]["path"][0]: {d["path"][0] for d in n["dependencyKeys"]} for n in nodes}
    assert deps["current_orders"] == {"raw_receipts", "current_orders"}  # self-dependent on D-1
    assert deps["daily_aggregates"] == {"current_orders"}
    assert deps["raw_receipts"] == set()
    expect(page.get_by_text("Asset checks").first).to_be_visible()
    shot(page, artifacts, "01-asset-graph-raw_receipts-current_orders-daily_aggregates")

    for asset in ("daily_aggregates", "current_orders"):
        page.goto(f"/assets/{asset}?view=checks")
        expect(page.get_by_text("Checks (8)")).to_be_visible()
        for name in (*GATE, SERVICE_LEVELS_CHECK, AUDIT):
            expect(page.locator("body")).to_contain_text(name)
        expect(page.get_by_text("This is a blocking asset check.")).to_be_visible()
    shot(page, artifacts, "02-current_orders-checks-tab-the-certification-report")


def test_a_landed_delivery_is_picked_up_by_the_sensor_and_appears_as_a_run(
    page: Page, dagster_ui: DagsterDev, instance: dg.DagsterInstance, artifacts: Path
) -> None:
    sensor = dagster_ui.graphql(
        "query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor "
        "{ sensorState { status } } } }",
        {
            "s": {
                "repositoryLocationName": LOCATION,
                "repositoryName": "__repository__",
                "sensorName": "source_manifest_sensor",
            }
        },
    )
    assert sensor["sensorOrError"]["sensorState"]["status"] == "RUNNING"  # default status: running

    seed001.deliver_baseline(dagster_ui.home / "landing")
    sensor_run = {"dagster/sensor_name": "source_manifest_sensor", "dagster/partition": seed001.BASELINE_DATE}
    done = dg.RunsFilter(tags=sensor_run, statuses=list(DONE))
    run = wait_for(
        lambda: next(iter(instance.get_runs(filters=done)), None),
        RUN_TIMEOUT,
        "the sensor's run of the landed load date to finish",
    )
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["replay/lane"] == "current"
    assert run.tags["dagster/run_key"].startswith(f"apply:{seed001.BASELINE_DATE}:")
    assert_gate_passed(check_evaluations(instance, run.run_id))

    page.goto("/runs")
    row = (
        page.locator("div")
        .filter(has=page.locator(f'a[href="/runs/{run.run_id}"]'))
        .filter(has_text="source_manifest_sensor")
        .last
    )
    expect(row).to_contain_text("Success")
    expect(row).to_contain_text(f"partition: {seed001.BASELINE_DATE}")
    expect(row).to_contain_text("replay/lane: current")
    shot(page, artifacts, "03-runs-list-sensor-run-of-the-landed-delivery")


def test_one_partition_materialized_from_the_ui_runs_and_its_checks_pass(
    page: Page, instance: dg.DagsterInstance, artifacts: Path
) -> None:
    page.goto("/assets/daily_aggregates")
    href = launch_from_partitions_dialog(page, "Materialize…", "2026-09-19", "Launch 1 run")
    run_id = href.rsplit("/", 1)[-1]
    run = wait_for(lambda: finished(instance, run_id), RUN_TIMEOUT, f"run {run_id} to finish")
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["dagster/partition"] == "2026-09-19"
    assert run.tags["replay/lane"] == "current"  # a UI launch outside a backfill
    assert_gate_passed(check_evaluations(instance, run_id))

    show_check_results(page, run_id, passed=GATE)
    shot(page, artifacts, "04-run-daily_aggregates-2026-09-19-launched-from-the-ui-checks-passed")


def test_a_backfill_from_the_dialog_runs_in_the_backfill_lane_and_is_gated(
    page: Page, dagster_ui: DagsterDev, instance: dg.DagsterInstance, artifacts: Path
) -> None:
    page.goto("/assets/daily_aggregates")
    href = launch_from_partitions_dialog(page, "Materialize…", "[2026-09-15...2026-09-20]", "Launch backfill")
    backfill_id = href.split("/runs/b/", 1)[-1].split("?", 1)[0]
    in_progress_at_once = 0

    def backfill_runs_done() -> list[dg.DagsterRun] | None:
        nonlocal in_progress_at_once
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        lane = dg.RunsFilter(tags={"replay/lane": "backfill"}, statuses=list(IN_PROGRESS))
        in_progress_at_once = max(in_progress_at_once, len(instance.get_runs(filters=lane)))
        # the backfill daemon marks the backfill complete only on its next pass (30 s); the run is
        # the outcome, so its end is what this waits for
        return runs if runs and all(r.status in DONE for r in runs) else None

    runs = wait_for(backfill_runs_done, RUN_TIMEOUT, f"backfill {backfill_id} to finish")
    # the lane coordinator stamps every run of a Dagster backfill, so the lane's limit applies
    assert {r.tags.get("replay/lane") for r in runs} == {"backfill"}
    # one run for the whole range (single-run backfill policy), through the run queue
    assert [(r.status, r.tags["dagster/asset_partition_range_start"]) for r in runs] == [
        (dg.DagsterRunStatus.SUCCESS, "2026-09-15")
    ]
    assert runs[0].tags["dagster/asset_partition_range_end"] == "2026-09-20"
    queued = instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.RUN_ENQUEUED)
    assert queued, "a backfill run is queued like any other run, so the lane limits apply to it"
    # gated like any other run: the publish gate's checks ran inside its step and passed
    assert_gate_passed(check_evaluations(instance, runs[0].run_id))
    limits = yaml.safe_load(
        dagster_ui.graphql("{ instance { runQueueConfig { tagConcurrencyLimitsYaml } } }")["instance"][
            "runQueueConfig"
        ]["tagConcurrencyLimitsYaml"]
    )
    assert {"key": "replay/lane", "value": "backfill", "limit": 1} in limits
    assert in_progress_at_once <= 1

    page.goto(f"/runs/b/{backfill_id}?tab=runs")
    expect(page.get_by_text("2026-09-15...2026-09-20")).to_be_visible()
    expect(page.get_by_text("Success").first).to_be_visible()
    page.get_by_text(re.compile(r"View all tags \(\d+\)")).first.click()
    tags = page.get_by_role("dialog")
    expect(tags).to_contain_text(f"Backfill: {backfill_id}")  # how the UI shows dagster/backfill
    expect(tags).to_contain_text("asset_partition_range_start: 2026-09-15")
    expect(tags).to_contain_text("replay/lane: backfill")
    shot(page, artifacts, "05-backfill-2026-09-15-to-2026-09-20-run-tags")
    page.keyboard.press("Escape")
    show_check_results(page, runs[0].run_id, passed=GATE)
    shot(page, artifacts, "06-backfill-run-gate-checks-passed")
    page.goto("/deployment/concurrency")
    page.get_by_text("Run tag concurrency", exact=True).click()
    expect(page.get_by_text("value: backfill")).to_be_visible()
    shot(page, artifacts, "07-deployment-run-tag-concurrency-lane-limits")


def test_a_failed_candidate_shows_its_failed_check_while_the_last_good_version_stays(
    page: Page, dagster_ui: DagsterDev, instance: dg.DagsterInstance, artifacts: Path
) -> None:
    # 2026-09-21 is never delivered: a run of 2026-09-22 builds a candidate on a gap
    seed001.deliver_cdc(dagster_ui.home / "landing", "B20260922-CDC-A", "2026-09-22", "2026-09-22T08:12:00Z")
    page.goto(f"/locations/{LOCATION}/jobs/apply_load_date_job")
    href = launch_from_partitions_dialog(page, "Materialize all…", "2026-09-22", "Launch 1 run")
    run_id = href.rsplit("/", 1)[-1]
    run = wait_for(lambda: finished(instance, run_id), RUN_TIMEOUT, f"run {run_id} to finish")
    assert run.status == dg.DagsterRunStatus.FAILURE
    evaluations = check_evaluations(instance, run_id)
    failed = evaluations["upstream_load_dates_certified"]
    assert not failed.passed
    assert failed.description == "MISSING_UPSTREAM_LOAD_DATE 2026-09-21"
    assert failed.metadata["first_missing"].value == "2026-09-21"
    assert [name for name in GATE if not evaluations[name].passed] == ["upstream_load_dates_certified"]

    page.goto("/assets/current_orders?view=checks")
    page.get_by_text("upstream_load_dates_certified", exact=True).filter(visible=True).first.click()
    page.get_by_role("tab", name="Execution history").click()
    row = page.locator("tr").filter(has_text="MISSING_UPSTREAM_LOAD_DATE 2026-09-21").first
    expect(row).to_contain_text("Failed")
    shot(page, artifacts, "08-current_orders-failed-check-in-execution-history")
    row.get_by_role("button").last.click()
    metadata = page.get_by_role("dialog")
    expect(metadata).to_contain_text("first_missing")
    expect(metadata).to_contain_text("2026-09-21")
    shot(page, artifacts, "09-current_orders-failed-check-metadata")
    page.keyboard.press("Escape")

    page.goto(f"/assets/current_orders?view=partitions&partition={seed001.BASELINE_DATE}")
    expect(page.get_by_text("APPLIED", exact=True)).to_be_visible()
    expect(page.get_by_text("(8, 5, 10, 690, 425, 265)")).to_be_visible()  # seed-001 baseline controls
    shot(page, artifacts, "10-current_orders-last-good-version-2026-09-20-still-materialized")
    # what consumers read did not move: the baseline's 8 active lines
    published = duckdb.connect(str(dagster_ui.home / "published.duckdb"), read_only=True)
    try:
        active = published.execute("SELECT count(*) FROM current_orders WHERE status = 'active'").fetchall()
    finally:
        published.close()
    assert active == [(8,)]
