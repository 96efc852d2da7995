"""Test tiers. ``uv run pytest -m "not slow"`` is the daily loop (a few minutes on 2 cores);
``uv run pytest`` (and CI) runs everything. The slow tier, in one place: processes killed at
every journal point, the real daemon and webserver, runs on the real PostgreSQL server, the
browser, the runbook executed end to end, the benchmark, and the big differential and
hypothesis runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay_assets_tests.postgres_server import Server, binaries, running

SLOW_MODULES = (
    "crash/",  # kill matrix, random kills, operator holds, races: a child process per case
    "defs/test_lanes_daemon.py",  # the real daemon and webserver
    "defs/test_backfill.py",  # a real Dagster backfill with a daemon of its own
    "ui/",  # Chromium against dagster dev
    "test_runbook.py",  # every runbook command, in order
    "test_benchmark_smoke.py",  # the benchmark script as a child
    "storage/test_storage_equals_reference.py",  # random differential against the reference
    "storage/test_late_conflict.py",  # real CLI backfills build the blocked home
)
SLOW_TESTS = (
    "test_fast_path_certifies_only_what_the_oracle_accepts_and_agrees_on_it",  # big hypothesis runs
    "test_sql_fold_equals_oracle",
    "test_malformed_lines_are_rejected_and_change_nothing",
    "test_a_fifo_in_place_of_the_data_file_never_hangs_run",  # `replay-assets run` as a child
    "test_a_late_batch_on_a_sealed_date_equals_the_same_batch_on_time",  # two homes an example
    "test_pruning_behind_the_horizon_changes_no_answer_inside_it",  # two homes an example
    "test_run_on_postgres_records_its_runs_there_and_equals_the_embedded_instance",  # two homes
    "test_a_killed_run_is_marked_failed_on_postgres_and_its_slots_freed",  # a child killed
    "test_instance_setting_errors_name_the_variable_never_the_url",  # dagster-postgres retries
    "test_the_ui_records_its_sample_on_the_named_instance",  # the seed 003 sample
    "test_run_in_homes_named_like_globs_serves_each_its_own_rows",  # three homes through the CLI
    "test_two_homes_side_by_side_each_see_only_their_own_rows",  # two homes an example
    "test_a_fifo_among_the_home_files_never_hangs_a_command",  # commands as children
    "test_an_unreachable_spark_server_is_a_clear_error_within_the_deadline",  # children, deadlines
    "test_a_connector_in_its_own_settings_lands_and_applies_exactly",  # land, run, export a fixture
    "test_backfill_runs_with_the_default_relative_home",  # `dagster job backfill` as a child
)


# pytest-xdist's workers run under an execnet ``__main__`` with neither ``__file__`` nor a spec.
# pyspark's Spark Connect import check (``pyspark.sql.connect.utils.check_dependencies``) reads
# that as a doctest run without its test extras and calls ``sys.exit(0)``, and pandera imports
# pyspark whenever it is installed: every worker would exit on its first import of pandera.
# Naming the worker's main module keeps the check on its ordinary path; an empty file of its own,
# since a spawned multiprocessing child runs its parent's main file.
_MAIN = sys.modules["__main__"]
if getattr(_MAIN, "__spec__", None) is None and not hasattr(_MAIN, "__file__"):
    _MAIN.__file__ = str(Path(__file__).with_name("xdist_main.py"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.nodeid.removeprefix("replay_assets_tests/")
        if where.startswith(SLOW_MODULES) or getattr(item, "originalname", item.name) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    """A real PostgreSQL server for the session (``postgres_server.py``); skipped, saying why,
    where Debian's binaries are missing (``.ci/run`` installs them, so CI always runs these)."""
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql-15)")
    with running(bin_dir) as server:
        yield server


@pytest.fixture(scope="session")
def sail() -> Iterator[str]:
    """A real local Sail server for the session (``sail_server.py``); its ``sc://`` address."""
    from replay_assets_tests import sail_server

    with sail_server.running() as remote:
        yield remote
