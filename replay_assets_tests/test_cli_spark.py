"""The command line on the scale-out set-up (issue 17): the warehouse on Delta tables through the
Spark adapter with ``REPLAY_ASSETS_WAREHOUSE=spark REPLAY_ASSETS_SPARK_REMOTE=local`` (an
embedded Sail server this process starts), the Dagster instance on a real PostgreSQL server
(``deploy/postgres/dagster.yaml``). A random CDC stream is landed and run through the CLI, then
exported: the state and the aggregates equal the core oracle; status, recovery and a replay say
the same as on DuckDB."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import aggregate_images
from replay_assets.core.events import ValidationContext
from replay_assets.entrypoints.cli import main
from replay_assets.entrypoints.environment import settings_from_environment
from replay_assets.entrypoints.runner import instance_for
from replay_assets_tests.core.strategies import deliveries, histories
from replay_assets_tests.postgres_server import Server
from replay_assets_tests.storage.test_storage_equals_reference import (
    IMAGE_FIELDS,
    NOW,
    load_dates,
    ready_at,
    reference,
    reference_final,
)

POSTGRES_INSTANCE = Path(__file__).resolve().parents[1] / "deploy" / "postgres" / "dagster.yaml"


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


@pytest.mark.slow
@settings(
    max_examples=1,  # a new stream every run; the use-case differential draws more (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_the_cli_on_spark_and_postgres_equals_the_oracle(postgres: Server, data: st.DataObject) -> None:
    history = data.draw(histories(), label="history")
    days = data.draw(deliveries(history), label="days")
    folder = Path(tempfile.mkdtemp(prefix="replay-assets-spark-cli-"))
    home = folder / "home"
    env = {
        "REPLAY_ASSETS_WAREHOUSE": "spark",
        "REPLAY_ASSETS_SPARK_REMOTE": "local",
        "REPLAY_ASSETS_DAGSTER_YAML": str(POSTGRES_INSTANCE),
        "DAGSTER_PG_URL": postgres.create_database(f"cli_{uuid.uuid4().hex[:12]}"),
        "REPLAY_ASSETS_NOW": NOW,
    }
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            patch.delenv("DAGSTER_HOME", raising=False)
            patch.delenv("REPLAY_ASSETS_FAIL_POINT", raising=False)
            found = _through_the_cli(folder, home, days)
            s = settings_from_environment(str(home))
            instance = instance_for(s.dagster_home, s.dagster_yaml)
            runs = instance.get_runs()
            storage = type(instance.run_storage).__name__
            instance.dispose()
        assert s.fixed_now is not None
        ctx = ValidationContext(
            dt.date.fromisoformat(s.business_date_start), s.business_date_end(s.fixed_now)
        )
        ref_rows, _ = reference(days, ctx)
        expected = reference_final(ref_rows)
        assert found["run"][0] == 0, found["run"][1]
        assert found["state"] == expected
        images = [row.image for row in ref_rows.values() if row.image is not None]
        oracle = [{k: g[k] for k in _AGGREGATE} for g in aggregate_images(images)]
        assert found["aggregates"] == oracle
        assert found["status"] and found["status"] <= {"CERTIFIED", "RESTATED"}
        assert found["recovery"] == (0, "no operation in doubt\n")
        assert found["again"][0] == 0 and "0 runs" in found["again"][1]  # replaying is a no-op
        # the warehouse is Delta under the home, the instance PostgreSQL: no DuckDB file, no SQLite
        assert (home / "delta" / "order_history" / "_delta_log").is_dir()
        assert not (home / "warehouse.duckdb").exists()
        assert storage == "PostgresRunStorage" and runs
        assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_AGGREGATE = (
    *("store_id", "business_date", "order_count", "line_count", "units"),
    *("amount_minor", "cost_minor", "gross_profit_minor"),
)


def _through_the_cli(folder: Path, home: Path, days: list[list[str]]) -> dict[str, Any]:
    for n, (day, lines) in enumerate(zip(load_dates(len(days)), days, strict=True)):
        file = folder / f"b{n}.jsonl"
        file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        land = ("land", str(file), "--source", "erp", "--load-date", day, "--batch-id", f"b{n}")
        assert cli(*land, "--ready-at", ready_at(day), "--home", str(home))[0] == 0
    found: dict[str, Any] = {"run": cli("run", "--home", str(home))}
    code, text = cli("export", "current_orders", "--format", "jsonl", "--home", str(home))
    assert code == 0
    state = {}
    for row in map(json.loads, text.splitlines()):
        image = tuple(row[f] for f in IMAGE_FIELDS)
        state[(row["order_id"], row["line_no"])] = (
            row["version"],
            row["status"],
            image,
            row["source_seq"],
            row["load_date"],
        )
    found["state"] = state
    code, text = cli("export", "daily_aggregates", "--format", "jsonl", "--home", str(home))
    found["aggregates"] = [{k: r[k] for k in _AGGREGATE} for r in map(json.loads, text.splitlines())]
    code, text = cli("status", "--json", "--home", str(home))
    assert code == 0
    found["status"] = {p["status"] for p in json.loads(text)["partitions"]}
    found["recovery"] = cli("recovery", "inspect", "--home", str(home))
    found["again"] = cli("run", "--home", str(home))
    return found
