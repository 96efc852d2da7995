"""What a newcomer sees after ``replay-assets ui`` on an empty home (issue 13, item 8): the
sample scenario (seed 003's incident) already in the UI, with filled partitions, passed gate
checks, the failed re-verification and the daily-totals chart. Debian's Chromium, Playwright,
the real command as a child process group."""

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from playwright.sync_api import Browser, Page, expect

from replay_assets_tests.ui.conftest import CHROMIUM
from replay_assets_tests.ui.dagster_dev import DagsterDev
from replay_assets_tests.ui.test_browser import AUDIT, GATE, shot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium"),
]


@pytest.fixture(scope="module")
def sample_ui(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[DagsterDev]:
    home = tmp_path_factory.mktemp("sample") / "home"
    with DagsterDev(home, artifacts / "sample-ui.log", {}, sample=True).running() as server:
        yield server


@pytest.fixture
def sample_page(browser: Browser, sample_ui: DagsterDev) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1600, "height": 1400}, base_url=sample_ui.url)
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def test_the_sample_shows_partitions_checks_and_the_daily_totals_chart(
    sample_page: Page, sample_ui: DagsterDev, artifacts: Path
) -> None:
    page = sample_page
    instance = dg.DagsterInstance.from_config(str(sample_ui.dagster_home))
    try:
        latest = instance.get_latest_materialization_event(dg.AssetKey("daily_aggregates"))
        state = instance.get_latest_materialization_event(dg.AssetKey("current_orders"))
    finally:
        instance.dispose()
    assert latest is not None and latest.dagster_event is not None
    assert state is not None and state.dagster_event is not None
    business_date = latest.dagster_event.partition
    load_date = state.dagster_event.partition

    page.goto(f"/assets/daily_aggregates?view=partitions&partition={business_date}")
    expect(page.get_by_text("daily_totals").first).to_be_visible()  # a typed table, that date's row only
    expect(page.get_by_text("gross_profit_minor").first).to_be_visible()
    shot(page, artifacts, "sample-01-daily_aggregates-daily-totals-chart")

    page.goto(f"/assets/current_orders?view=partitions&partition={load_date}")
    expect(page.get_by_text("service_levels").first).to_be_visible()
    shot(page, artifacts, "sample-02-current_orders-partition-with-service-levels")

    for name, outcome in ((GATE[0], "Passed"), (AUDIT, "Failed")):  # seed 003's corrupted publication
        page.goto(f"/assets/current_orders?view=checks&checkDetail={name}")
        page.get_by_role("tab", name="Execution history").click()
        expect(page.locator("tr").filter(has_text=outcome).first).to_be_visible()
    shot(page, artifacts, "sample-03-current_orders-failed-re-verification")
