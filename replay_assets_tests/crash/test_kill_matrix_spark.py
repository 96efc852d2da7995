"""The kill matrix's apply and publish points with the warehouse on Delta (the Spark adapter on
the tests' Sail server, and on a Sail cluster of two workers, shared by the killed child and the
rerun): SIGKILL inside the target
unit and right after its fence, for applying a load date (seed 000's move; and after the state
asset committed) and for publishing a queued restatement (seed 002's late delivery); a normal
rerun ends exactly where an uninterrupted run on the same engine ends, each operation's target
mutation done once. The journal's other transitions are
killed on both engines in ``storage/test_journal_kills.py``."""

import dataclasses
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest

from replay_assets.entrypoints.session import Session
from replay_assets_tests.crash.test_kill_matrix import late_restatement_publish, seed000_move
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.stores import SERVERS, SPARK_KINDS, store_rows

# the points where the target unit is open or has just fenced (the suite's budget: the
# executor's other transitions are engine-neutral and killed on Delta in test_journal_kills.py)
APPLY = ["apply_load_date:inside_target", "apply_load_date:after_target_commit", "state.after_commit"]
PUBLISH = ["publish_aggregates:inside_target", "publish_aggregates:after_target_commit"]
SCENARIOS: dict[str, tuple[Callable[..., str], list[str]]] = {
    "seed000_move": (seed000_move, APPLY),
    "late_restatement_publish": (late_restatement_publish, PUBLISH),
}
CASES = [(name, point) for name, (_, points) in SCENARIOS.items() for point in points]

pytestmark = pytest.mark.slow


def opener(remote: str) -> Callable[[Path, str], Session]:
    def open_session(home: Path, now: str) -> Session:
        settings = dataclasses.replace(settings_for(home, now), warehouse="spark", spark_remote=remote)
        return Session(settings, home / "dagster")

    return open_session


def outcome(s: Session) -> dict[str, Any]:
    """What the kill matrix compares (``test_kill_matrix.outcome``), read through the port."""

    def rows(table: str, *columns: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[c] for c in columns) for r in store_rows(s.pipeline.store, table))

    with s.pipeline.store.read() as unit:
        aggregates = unit.reports.export_table("daily_aggregates", None).drop("certified_at")
        pending = len([g for g in unit.publish.pending_groups()])
    return {
        "publications": rows("publications", "asset", "partition_key", "version", "content_sha256"),
        "snapshots": rows("snapshots", "load_date", "content_sha256"),
        "fences": rows("commit_markers", "operation_id"),
        "operations": rows("operations", "operation_id", "state"),
        "aggregates": aggregates.sort(pl.all()).rows(),
        "queue": pending,
        "unreleased": len(
            [r for r in store_rows(s.pipeline.store, "restatement_queue") if r["released_at"] is None]
        ),
    }


@pytest.fixture(scope="module", params=SPARK_KINDS)
def server(request: pytest.FixtureRequest) -> str:
    """The server the module's cases run on (each Spark kind's in turn): the templates, the
    references and the killed children are built once per server."""
    remote: str = request.getfixturevalue(SERVERS[request.param])
    return remote


@pytest.fixture(scope="module")
def prepared(
    server: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, str, dict[str, Any]]]:
    """Per scenario: a template home just before the operation, and the uninterrupted outcome."""
    out = {}
    open_session = opener(server)
    for name, (build, _) in SCENARIOS.items():
        template = tmp_path_factory.mktemp(name) / "template"
        now = build(template, open_session)
        reference = tmp_path_factory.mktemp(name) / "reference"
        shutil.copytree(template, reference)
        s = open_session(reference, now)
        assert not s.run().failed
        out[name] = (template, now, outcome(s))
        s.close()
    return out


@pytest.fixture(scope="module")
def killed(
    server: str,
    prepared: dict[str, tuple[Path, str, dict[str, Any]]],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], tuple[Path, int]]:
    """Every case killed in a child process on the same Sail server (the session passes its
    warehouse settings to the child); two at a time."""
    root = tmp_path_factory.mktemp("killed")

    def kill(case: tuple[str, str]) -> tuple[tuple[str, str], tuple[Path, int]]:
        name, point = case
        template, now, _ = prepared[name]
        home = root / f"{name}-{point.replace(':', '-').replace('.', '-')}"
        shutil.copytree(template, home)
        return case, (home, opener(server)(home, now).run_in_subprocess(fail_point=point))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(kill, CASES))


@pytest.mark.parametrize(("scenario", "point"), CASES)
def test_kill_then_rerun_on_delta_equals_an_uninterrupted_run(
    server: str,
    prepared: dict[str, tuple[Path, str, dict[str, Any]]],
    killed: dict[tuple[str, str], tuple[Path, int]],
    scenario: str,
    point: str,
) -> None:
    home, code = killed[(scenario, point)]
    assert code == -9, f"the fail point {point} was never reached"
    assert not (home / "warehouse.duckdb").exists()  # the killed child worked on Delta too
    _, now, reference = prepared[scenario]
    s = opener(server)(home, now)
    summary = s.run()
    assert summary.orphans_failed >= 1  # the killed run was left STARTED; its slots are freed
    assert not s.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert outcome(s) == reference
    s.close()
