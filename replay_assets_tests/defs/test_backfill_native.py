"""``replay-assets backfill`` is a real Dagster asset backfill (SPEC 9 and 11): the Backfills page
lists it with the operator's note and opens without error, the daemon's backfill loop launches
its runs, and ``--wait`` on the default relative home leaves no restatement pending. The GraphQL
queries are the UI's, executed in-process on a workspace of the home (its code server a child)."""

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.runner import instance_for
from replay_assets_tests.defs.test_lanes_daemon import DAYS, NOW, deliver

pytestmark = pytest.mark.slow  # the real daemon, a code server as a child

WAIT = ["--wait"]
NOTE = 'restate after the "pos" correction'
BACKFILLS = """{
  partitionBackfillsOrError {
    __typename
    ... on PartitionBackfills {
      results { id status title description isAssetBackfill tags { key value } }
    }
    ... on PythonError { message }
  }
}"""
# the UI's BackfillDetailsQuery, with the fields of its fragments that failed for a job backfill
DETAILS = """query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      id status title description isAssetBackfill numPartitions
      assetSelection { path }
      error { message }
      partitionStatuses { results { partitionName runStatus } }
      assetBackfillData {
        rootTargetedPartitions { partitionKeys ranges { start end } }
        assetBackfillStatuses {
          ... on AssetPartitionsStatusCounts {
            assetKey { path } numPartitionsTargeted numPartitionsMaterialized numPartitionsFailed
          }
        }
      }
    }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}"""


@contextmanager
def graphql_on(dagster_home: Path) -> Iterator[Any]:
    """A GraphQL request context on the home's instance and workspace, as the webserver has."""
    instance = instance_for(dagster_home)
    try:
        with define_out_of_process_context(str(dagster_home / "workspace.yaml"), None, instance) as context:
            yield context
    finally:
        instance.dispose()


def query(context: Any, text: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return dict(execute_dagster_graphql(context, text, dict(variables or {})).data)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two load dates delivered on the default relative home ``data``, the clock fixed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_DAGSTER_YAML"):
        monkeypatch.delenv(name, raising=False)
    deliver(Path("data") / "landing", DAYS[:2])
    return Path("data")


def pending_aggregates(capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    main(["status", "--json"])
    report = json.loads(capsys.readouterr().out)
    return [
        p["partition_key"]
        for p in report["partitions"]
        if p["asset"] == "daily_aggregates" and p["status"] == "PENDING_RESTATEMENT"
    ]


def test_backfill_wait_on_the_default_home_leaves_nothing_pending(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, last = DAYS[0], DAYS[1]
    code = main(
        ["backfill", "--asset", "current_orders", "--from", first, "--to", last, "--note", NOTE, "--wait"]
    )
    assert code == 0, capsys.readouterr()
    assert pending_aggregates(capsys) == []
    instance = instance_for(home / "dagster")
    try:
        (backfill,) = instance.get_backfills()
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill.backfill_id}))
        applied = {r.tags["dagster/partition"] for r in runs if r.status == dg.DagsterRunStatus.SUCCESS}
        assert applied == {first, last}
        assert all(r.tags["replay/lane"] == "backfill" for r in runs)
        restated = instance.get_latest_materialization_event(dg.AssetKey("daily_aggregates"))
        assert restated is not None  # the queued restatements were executed, not left for `run`
    finally:
        instance.dispose()


def test_a_daily_aggregates_backfill_is_listed_with_its_note_and_its_page_opens(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run"]) == 0
    first, last = DAYS[0], DAYS[1]
    code = main(
        ["backfill", "--asset", "daily_aggregates", "--from", first, "--to", last, "--note", NOTE, "--wait"]
    )
    assert code == 0, capsys.readouterr()
    with graphql_on((home / "dagster").resolve()) as context:
        listed = query(context, BACKFILLS)["partitionBackfillsOrError"]
        assert listed["__typename"] == "PartitionBackfills", listed
        (backfill,) = listed["results"]
        details = query(context, DETAILS, {"id": backfill["id"]})["partitionBackfillOrError"]
    assert details["__typename"] == "PartitionBackfill", details
    assert (backfill["title"], backfill["description"]) == ("restate after the 'pos' correction", NOTE)
    assert backfill["isAssetBackfill"] and backfill["status"] == "COMPLETED_SUCCESS"
    tags = {t["key"]: t["value"] for t in backfill["tags"]}
    assert tags["replay/lane"] == "backfill" and tags["replay/operator"]
    assert tags["replay/note"] == backfill["title"]  # the UI shows tags, not the title
    assert details["error"] is None and details["assetSelection"] == [{"path": ["daily_aggregates"]}]
    root = details["assetBackfillData"]["rootTargetedPartitions"]
    assert root["ranges"] == [{"start": first, "end": last}]
    (counts,) = details["assetBackfillData"]["assetBackfillStatuses"]
    assert (counts["numPartitionsTargeted"], counts["numPartitionsMaterialized"]) == (2, 2)
