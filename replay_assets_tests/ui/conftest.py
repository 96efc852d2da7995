"""Fixtures of the browser tests: one ``dagster dev`` per module, Debian's Chromium, screenshots."""

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import dagster as dg
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from replay_assets.demo.scenarios import seed001
from replay_assets_tests.ui.dagster_dev import ROOT, DagsterDev

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# the seed-001 load dates (2026-09-20/21) are recent for the pipeline under this clock; the
# partition starts keep the UI's partition bars short; sensors tick every 5 s instead of 30 s so
# the module stays under three minutes
SERVER_ENV = {
    "REPLAY_ASSETS_NOW": seed001.NOW,
    "REPLAY_ASSETS_SENSOR_INTERVAL_SECONDS": "5",
    "REPLAY_ASSETS_LOAD_DATE_START": "2026-09-01",
    "REPLAY_ASSETS_BUSINESS_DATE_START": "2026-09-01",
}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go: ``$REPLAY_ASSETS_ARTIFACTS``, else ``artifacts/screenshots``."""
    path = Path(os.environ.get("REPLAY_ASSETS_ARTIFACTS") or ROOT / "artifacts" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def dagster_ui(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[DagsterDev]:
    """``replay-assets ui --no-sample`` on a free loopback port and a temporary home (the tests
    deliver into it themselves); the process group always ends."""
    root = tmp_path_factory.mktemp("ui")
    with DagsterDev(root / "home", artifacts / "dagster-dev.log", SERVER_ENV).running() as server:
        yield server


@pytest.fixture(scope="module")
def instance(dagster_ui: DagsterDev) -> Iterator[dg.DagsterInstance]:
    """The server's instance, read from the test process (SQLite storage takes concurrent readers)."""
    found = dg.DagsterInstance.from_config(str(dagster_ui.dagster_home))
    yield found
    found.dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(
    browser: Browser, dagster_ui: DagsterDev, artifacts: Path, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh page on the server; a failing test leaves a screenshot of where it stopped."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=dagster_ui.url)
    context.set_default_timeout(30_000)
    opened = context.new_page()
    yield opened
    if request.node.stash.get(FAILED, False):
        opened.screenshot(path=str(artifacts / f"FAILED-{request.node.name}.png"), full_page=True)
    context.close()
