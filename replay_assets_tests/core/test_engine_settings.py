"""The warehouse engine as the settings name it (SPEC 10 "Scale-out"): the environment over the
settings file over the DuckDB default, refused when it names no engine, and carried whole into
every Dagster step by the resource."""

import json

import pytest

from replay_assets.core.config import SettingsError, settings_from
from replay_assets.defs.resources import ReplayResource


def test_duckdb_in_the_home_is_the_default() -> None:
    s = settings_from({}, "home", None)
    assert (s.warehouse, s.spark_remote, s.delta_root) == ("duckdb", "local", None)
    assert s.delta_uri.endswith("/home/delta")


def test_the_environment_wins_over_the_settings_file() -> None:
    env = {"REPLAY_ASSETS_WAREHOUSE": "spark", "REPLAY_ASSETS_SPARK_REMOTE": "sc://spark.internal:15002"}
    config = json.dumps(
        {
            "warehouse": "duckdb",
            "delta_root": "s3://bucket/warehouse",
            "spark_landing_uri": "s3://bucket/landing",
        }
    )
    s = settings_from(env, "home", config)
    assert (s.warehouse, s.spark_remote, s.delta_uri) == (
        "spark",
        "sc://spark.internal:15002",
        "s3://bucket/warehouse",
    )
    assert s.spark_landing_uri == "s3://bucket/landing"
    assert ReplayResource.for_settings(s).settings() == s  # every Dagster step sees the same engine


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"REPLAY_ASSETS_WAREHOUSE": "oracle"}, "REPLAY_ASSETS_WAREHOUSE is not one of duckdb, spark"),
        ({"REPLAY_ASSETS_SPARK_REMOTE": "spark.internal:15002"}, "SPARK_REMOTE is neither local nor"),
        ({"REPLAY_ASSETS_SPARK_LANDING_URI": "/mnt/landing"}, "SPARK_LANDING_URI is not a URI"),
    ],
)
def test_an_unknown_engine_or_address_is_a_settings_error(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings_from(env, "home", None)
