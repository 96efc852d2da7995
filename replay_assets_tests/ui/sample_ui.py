"""The sample UI of ``test_sample.py``: ``replay-assets ui`` on an empty home, run until its
sample is played (the sensors applied the week, the incident was found and repaired), and the
GraphQL reads the tests share. No browser here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay_assets.demo.sample import SOURCE
from replay_assets_tests.ui.dagster_dev import DagsterDev, wait_for

LOCATION = "replay_assets.definitions"
REPOSITORY = "__repository__"
PLAYED = "the incident is repaired"
NOT_PLAYED = "the incident was not played"
SAMPLE_TIMEOUT = 1200  # a week of load dates through real ticks and run processes, on 2 busy cores


def played(server: DagsterDev) -> bool:
    """Whether ``replay-assets ui`` said its sample is done; fails on what it could not do."""
    text = server.log_path.read_text(errors="replace")
    if NOT_PLAYED in text:
        line = next(line for line in text.splitlines() if NOT_PLAYED in line)
        raise AssertionError(line)
    return PLAYED in text


def wait_played(server: DagsterDev) -> None:
    wait_for(lambda: played(server), SAMPLE_TIMEOUT, "the sample's week and incident to be played")


def delivered_load_dates(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "landing" / SOURCE).iterdir())


def selector(**names: str) -> dict[str, str]:
    return {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY, **names}


def sensor_ticks(server: DagsterDev, sensor: str) -> list[dict[str, Any]]:
    data = server.graphql(
        "query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor "
        "{ sensorState { ticks(limit: 1000) { status runIds skipReason } } } } }",
        {"s": selector(sensorName=sensor)},
    )
    return list(data["sensorOrError"]["sensorState"]["ticks"])


def runs_tagged(server: DagsterDev, key: str, value: str) -> list[dict[str, Any]]:
    data = server.graphql(
        "query($f: RunsFilter) { runsOrError(filter: $f) { ... on Runs { results "
        "{ runId status jobName tags { key value } } } } }",
        {"f": {"tags": [{"key": key, "value": value}]}},
    )
    return list(data["runsOrError"]["results"])


def tags_of(run: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def backfills(server: DagsterDev) -> list[dict[str, Any]]:
    data = server.graphql(
        "{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status title "
        "description isAssetBackfill partitionNames tags { key value } } } } }"
    )
    return list(data["partitionBackfillsOrError"]["results"])


def check_executions(server: DagsterDev, asset: str, check: str) -> list[dict[str, Any]]:
    """Every execution of one check, newest first."""
    data = server.graphql(
        "query($a: AssetKeyInput!, $c: String!) { assetCheckExecutions(assetKey: $a, checkName: $c, "
        "limit: 1000) { runId status partition timestamp evaluation { description } } }",
        {"a": {"path": [asset]}, "c": check},
    )
    return list(data["assetCheckExecutions"])


def asset_checks(server: DagsterDev, asset: str) -> list[dict[str, Any]]:
    data = server.graphql(
        "query($a: AssetKeyInput!) { assetNodeOrError(assetKey: $a) { ... on AssetNode "
        "{ assetChecksOrError { ... on AssetChecks { checks { name blocking "
        "partitionDefinition { description } } } } } } }",
        {"a": {"path": [asset]}},
    )
    return list(data["assetNodeOrError"]["assetChecksOrError"]["checks"])


def partition_stats(server: DagsterDev, asset: str) -> dict[str, int]:
    data = server.graphql(
        "query($a: AssetKeyInput!) { assetNodeOrError(assetKey: $a) { ... on AssetNode "
        "{ partitionStats { numMaterialized numPartitions numFailed } } } }",
        {"a": {"path": [asset]}},
    )
    return dict(data["assetNodeOrError"]["partitionStats"])


def materializations(server: DagsterDev, asset: str) -> list[dict[str, Any]]:
    """Every materialization of ``asset`` with its metadata entries (type and label, and a
    table's schema), newest first."""
    data = server.graphql(
        "query($a: AssetKeyInput!) { assetOrError(assetKey: $a) { ... on Asset { "
        "assetMaterializations(limit: 1000) { partition runId metadataEntries { __typename label "
        "... on TableMetadataEntry { table { schema { columns { name type } } } } "
        "... on TableSchemaMetadataEntry { schema { columns { name type } } } } } } } }",
        {"a": {"path": [asset]}},
    )
    return list(data["assetOrError"]["assetMaterializations"])


def asset_definition(server: DagsterDev, asset: str) -> dict[str, Any]:
    """The asset's kinds and its definition metadata (label and type of each entry)."""
    data = server.graphql(
        "query($a: AssetKeyInput!) { assetNodeOrError(assetKey: $a) { ... on AssetNode { kinds "
        "metadataEntries { __typename label } } } }",
        {"a": {"path": [asset]}},
    )
    return dict(data["assetNodeOrError"])
