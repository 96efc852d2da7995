"""DuckDB's memory limit is a share of the machine's memory (``duckdb_memory_percent``, 40 % by
default): the environment over the settings file over the default, refused outside 1 to 90 %,
carried whole into every Dagster step, and the limit every warehouse connection opens with."""

import json
import re
from pathlib import Path

import pytest

from replay_assets.core.config import SettingsError, settings_from
from replay_assets.defs.resources import ReplayResource
from replay_assets.storage.db.warehouse import machine_memory_bytes
from replay_assets.usecases.context import Pipeline

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
SHOWN = 0.1 * (1 << 30)  # DuckDB shows the limit cut to a tenth of its unit (here GiB)


def _limits(pipeline: Pipeline) -> list[float]:
    """The memory limit of the writer's and the reader's connection, in bytes."""
    found = []
    with pipeline.warehouse.connect() as con:
        found.append(con.execute("SELECT current_setting('memory_limit')").fetchone())
    with pipeline.reader.read() as con:
        found.append(con.execute("SELECT current_setting('memory_limit')").fetchone())
    sizes = []
    for row in found:
        assert row is not None
        number, unit = re.fullmatch(r"([0-9.]+) ?([KMGT]iB)", str(row[0])).groups()  # type: ignore[union-attr]
        sizes.append(float(number) * UNITS[unit])
    return sizes


def test_the_default_is_forty_percent_of_the_machine(tmp_path: Path) -> None:
    settings = settings_from({}, str(tmp_path), None)
    assert settings.duckdb_memory_percent == 40.0
    for size in _limits(Pipeline(settings)):
        assert machine_memory_bytes() * 0.40 - SHOWN <= size <= machine_memory_bytes() * 0.40


def test_the_environment_wins_over_the_settings_file(tmp_path: Path) -> None:
    config = json.dumps({"duckdb_memory_percent": 10})
    from_file = settings_from({}, str(tmp_path), config)
    assert from_file.duckdb_memory_percent == 10.0
    settings = settings_from({"REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT": "5"}, str(tmp_path), config)
    assert settings.duckdb_memory_percent == 5.0
    assert ReplayResource.for_settings(settings).settings() == settings  # every step opens with it
    for size in _limits(Pipeline(settings)):
        assert machine_memory_bytes() * 0.05 - SHOWN <= size <= machine_memory_bytes() * 0.05


@pytest.mark.parametrize(
    ("env", "config", "message"),
    [
        ({}, {"duckdb_memory_percent": 0}, "duckdb_memory_percent is not a number from 1 to 90"),
        ({}, {"duckdb_memory_percent": 95}, "duckdb_memory_percent is not a number from 1 to 90"),
        ({}, {"duckdb_memory_percent": "40%"}, "duckdb_memory_percent is not a number"),
        ({"REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT": "lots"}, {}, "REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT"),
        ({"REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT": "nan"}, {}, "REPLAY_ASSETS_DUCKDB_MEMORY_PERCENT"),
    ],
)
def test_a_share_outside_one_to_ninety_percent_is_refused(
    env: dict[str, str], config: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        settings_from(env, "home", json.dumps(config))
