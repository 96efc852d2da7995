"""The kill matrix's apply points on Dagster's production instance (``deploy/postgres/dagster.yaml``
on a real PostgreSQL server): SIGKILL at every journal transition and inside the target
transaction of a CDC batch's load date; a normal rerun must end exactly where an uninterrupted
run ends, the killed run marked failed in PostgreSQL. Each home has its own instance database,
copied from the template's with ``CREATE DATABASE ... TEMPLATE``, as the home folder is."""

import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from replay_assets_tests.crash.test_kill_matrix import APPLY_POINTS, outcome, seed001_batch, session
from replay_assets_tests.postgres_server import Server

POSTGRES_INSTANCE = Path(__file__).resolve().parents[2] / "deploy" / "postgres" / "dagster.yaml"


@contextmanager
def instance_url(url: str) -> Iterator[None]:
    """``DAGSTER_PG_URL`` for the instances this process loads in the body (the tests' own
    sessions run one at a time; child processes get theirs in their environment)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_PG_URL", url)
        yield


def _home(folder: Path) -> Path:
    """A home whose Dagster home holds the PostgreSQL instance file."""
    (folder / "dagster").mkdir(parents=True)
    shutil.copyfile(POSTGRES_INSTANCE, folder / "dagster" / "dagster.yaml")
    return folder


@pytest.fixture(scope="module")
def template(
    postgres: Server, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str, str, dict[str, Any]]:
    """A home just before the CDC batch's load date, its instance database, the clock, and the
    uninterrupted outcome (from a copy of both)."""
    root = tmp_path_factory.mktemp("pg_matrix")
    database = f"km_{uuid.uuid4().hex[:12]}"
    with instance_url(postgres.create_database(database)):
        now = seed001_batch(_home(root / "template"))
    shutil.copytree(root / "template", root / "reference")
    with instance_url(postgres.create_database(f"{database}_ref", template=database)):
        s = session(root / "reference", now)
        assert not s.run().failed
        reference = outcome(s)
        s.close()
    return root / "template", database, now, reference


@pytest.fixture(scope="module")
def killed(
    postgres: Server, template: tuple[Path, str, str, dict[str, Any]]
) -> dict[str, tuple[Path, str, int]]:
    """Every apply point killed in a child process, two at a time: point -> home, its instance
    database's URL, the child's exit code."""
    home0, database, now, _ = template

    def kill(point: str) -> tuple[str, tuple[Path, str, int]]:
        suffix = point.replace(":", "_").replace(".", "_").lower()
        home = home0.parent / f"killed-{suffix}"
        shutil.copytree(home0, home)
        url = postgres.create_database(f"{database}_{suffix}", template=database)
        env = {**os.environ, "DAGSTER_PG_URL": url}
        return point, (home, url, session(home, now).run_in_subprocess(fail_point=point, env=env))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(kill, APPLY_POINTS))


@pytest.mark.parametrize("point", APPLY_POINTS)
def test_kill_then_rerun_on_postgres_equals_an_uninterrupted_run(
    template: tuple[Path, str, str, dict[str, Any]], killed: dict[str, tuple[Path, str, int]], point: str
) -> None:
    home, url, code = killed[point]
    assert code == -9, f"the fail point {point} was never reached"
    _, _, now, reference = template
    with instance_url(url):
        s = session(home, now)
        summary = s.run()
        assert summary.orphans_failed >= 1  # the killed run was left STARTED in PostgreSQL
        failed = s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert failed and not s.instance.get_runs(
            filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
        )
        assert outcome(s) == reference
        s.close()
