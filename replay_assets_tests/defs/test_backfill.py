"""A real Dagster asset backfill (``replay-assets backfill --wait``, daemon started for the duration) is
gated like every other run: a backfill over a never-delivered load date stays out of view."""

import json
import warnings
from pathlib import Path

import dagster as dg
import pytest

from replay_assets.core.errors import ReplayError
from replay_assets.demo.scenarios import seed002
from replay_assets.entrypoints import backfill
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import instance_for
from replay_assets.entrypoints.session import Session
from replay_assets_tests.helpers import settings_for


def test_backfill_over_a_missing_load_date_runs_in_the_backfill_lane_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "replay-assets.json").write_text(json.dumps({"sources": {"pos": seed002.BACKFILL["certified"]}}))
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed002.NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    seed002.deliver_backfill_case(home / "landing")
    assert main(["run", "--home", str(home)]) == 1  # 2026-10-01 is MISSING, later dates DELAYED
    first, last = seed002.BACKFILL["range"][0], seed002.BACKFILL["range"][-1]
    code = main(
        [
            "backfill",
            "--asset",
            "current_orders",
            "--from",
            first,
            "--to",
            last,
            "--note",
            "replay the days after the gap",
            "--wait",
            "--home",
            str(home),
        ]
    )
    assert code == 1  # every applying run failed its gate
    instance = instance_for(home / "dagster")
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"replay/lane": "backfill"}))
    [backfill_id] = {r.tags["dagster/backfill"] for r in runs}
    assert instance.get_backfill(backfill_id) is not None  # on the UI's backfills page
    # the asset backfill lands each load date in one run and applies it in another
    applying = [r for r in runs if dg.AssetKey("current_orders") in (r.asset_selection or ())]
    assert sorted(r.tags["dagster/partition"] for r in applying) == seed002.BACKFILL["range"]
    assert {r.status for r in applying} == {dg.DagsterRunStatus.FAILURE}
    instance.dispose()
    session = Session(settings_for(home, seed002.NOW), home / "dagster")
    assert session.query("SELECT value FROM pointers") == [{"value": seed002.BACKFILL["certified"]}]
    reasons = session.query("SELECT partition_key, reason FROM candidates ORDER BY 1")
    assert reasons[0]["partition_key"] == first
    assert "MISSING_UPSTREAM_LOAD_DATE 2026-10-01" in reasons[0]["reason"]
    note = session.query("SELECT asset, from_partition, to_partition, lane, note FROM backfills")
    assert note == [
        {
            "asset": "current_orders",
            "from_partition": first,
            "to_partition": last,
            "lane": "backfill",
            "note": "replay the days after the gap",
        }
    ]
    session.close()


def test_waiting_with_a_daemon_of_its_own_leaves_no_log_file_open(tmp_path: Path) -> None:
    session = Session(settings_for(tmp_path, seed002.NOW), tmp_path / "dagster")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(ReplayError, match="did not finish in 0 s"):
            backfill.wait(session, "no-such-backfill", lambda _: None, timeout=0)  # starts and stops a daemon
    assert (tmp_path / "dagster" / "daemon.log").exists()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    session.close()
