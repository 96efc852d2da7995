"""Test tiers. ``uv run pytest -m "not slow"`` is the daily loop (a few minutes on 2 cores);
``uv run pytest`` (and CI) runs everything. The slow tier, in one place: processes killed at
every journal point, the real daemon and webserver, runs on the real PostgreSQL server, the
browser, the runbook executed end to end, the benchmark, the big differential and hypothesis
runs, and every case on the Sail cluster."""

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
    "scenarios/test_seed001.py",  # the costliest seed scenarios, a home through every step
    "scenarios/test_seed002.py",  # (seeds 000, 003 and 004 stay in the fast tier)
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
    # Whole pipelines of homes through the commands, each a few seconds: the fast tier keeps
    # cheaper tests of the same modules (the tiers test checks every module keeps one).
    # storage/test_bad_input.py
    "test_batch_violation_blocks_the_load_date_until_resolved",
    "test_new_batch_for_the_latest_applied_date_restates_it",
    "test_ready_at_in_the_future_is_blocked_upstream_until_it_passes",
    "test_stale_replay_is_skipped_and_never_overwrites",
    "test_superseding_the_batch_of_the_latest_date_removes_its_changes",
    "test_reconciliation_adds_up_per_batch_across_batches_and_days",
    "test_a_blocked_restatement_of_the_latest_date_applies_nothing",
    "test_per_event_failures_are_rejected_with_line_and_reason_and_the_rest_applies",
    "test_stale_upsert_never_resurrects_a_tombstone_and_a_higher_version_restores",
    "test_missing_load_date_delays_later_dates_and_consumers_keep_the_last_certified",
    "test_redelivering_the_identical_manifest_is_a_no_op",
    "test_a_corrected_batch_under_a_new_batch_id_unblocks_the_load_date",
    "test_late_delivery_for_a_sealed_date_changes_nothing",
    # test_hostile_input.py
    "test_odd_entries_are_reported_and_other_sources_still_apply",
    "test_a_manifest_with_a_duplicated_key_is_unreadable_and_reported",
    "test_a_batch_id_used_by_two_sources_hides_neither",
    "test_export_as_of_takes_only_calendar_dates",
    "test_a_warehouse_held_by_another_process_is_busy_not_damaged",
    "test_status_update_of_an_unknown_partition_exits_1",
    "test_a_reused_batch_id_is_named_by_status",
    "test_a_batch_id_reused_on_a_later_load_date_is_reported_not_missing",
    "test_export_never_writes_into_the_home",
    "test_an_over_long_line_is_rejected_while_read_and_kept_as_a_prefix",
    "test_invalid_utf8_is_rejected_never_replaced",
    "test_a_delivery_dated_outside_the_load_date_window_is_named_by_status",
    "test_resolve_refuses_to_skip_a_batch_that_blocks_nothing",
    # test_cli.py (test_land_run_export stays: the commands end to end)
    "test_land_takes_a_seed000_document_one_batch_at_a_time",
    "test_a_schema_blocked_batch_lands_again_once_the_settings_file_declares_its_upcaster",
    "test_the_command_leaves_no_write_ahead_log_when_it_exits_past_the_final_collection",
    "test_run_marks_a_killed_run_failed_and_frees_its_slots",
    "test_a_parquet_delivery_with_the_same_columns_applies",
    "test_recovery_commands_read_the_journal_without_dagster",
    "test_run_exits_1_and_says_why_when_blocked_then_resolve",
    "test_land_takes_debezium_files_through_the_declared_mapping_and_keeps_their_evidence",
    # storage/test_published_state.py
    "test_live_is_a_generation_of_hard_links_named_apart_from_the_one_before",
    "test_readers_see_whole_generations_while_they_are_swapped",
    "test_a_copy_the_change_log_cannot_bring_forward_is_rewritten_whole",
    "test_an_export_a_swap_falls_inside_is_run_again_and_reads_the_generation_now_live",
    "test_a_date_that_changes_no_partition_still_publishes_its_record",
    "test_a_refresh_rewrites_only_the_cohorts_the_date_changed",
    "test_the_cohorts_of_a_month_the_horizon_passed_merge_into_one_file",
    "test_a_copy_whose_files_were_written_by_business_date_is_rewritten_whole",
    # test_home_files.py
    "test_a_fifo_in_place_of_the_published_copys_record_never_hangs_run",
    "test_the_refusal_of_an_as_of_read_behind_the_horizon_reads_correctly",
    "test_a_closed_pipe_ends_a_command_quietly_as_a_shell_expects",
    "test_a_note_whose_owner_is_gone_is_dropped_though_its_pid_lives",
    # test_input_documents.py, test_settings_hostile.py
    "test_the_adapter_named_wins_over_a_parquet_file_name",
    "test_every_environment_variable_takes_hostile_values_without_a_traceback",
    "test_a_freshness_target_that_is_no_number_never_reaches_status",
    # storage/test_journal_kills.py (a child killed per journal point), storage/test_segments.py
    "test_a_kill_at_any_journal_point_leaves_one_mutation_after_the_retry",
    "test_the_pruned_dates_files_leave_the_home",
    "test_a_home_moved_elsewhere_reads_its_segments",
    # test_debezium_cli.py
    "test_a_commit_time_beyond_year_9999_rejects_its_record_and_lands_the_rest",
    "test_an_over_long_line_is_bounded_while_land_reads_it",
    "test_the_default_mapping_never_merges_another_schema_into_public",
    # defs/test_operations.py (the sensor and the step's retry through real runs)
    "test_the_first_tick_after_the_source_is_ready_launches_the_load_exactly_once",
    "test_a_retry_after_the_commit_applies_nothing_twice",
    "test_materializations_carry_evidence_a_person_can_read",
    # test_readers.py, storage/test_landing_workers.py, defs/test_instance.py
    "test_the_published_copy_mirrors_the_waiting_statuses_the_run_recorded",
    "test_the_readers_answer_without_importing_dagster",
    "test_while_a_writer_holds_the_warehouse_readers_answer_from_the_published_copy",
    "test_a_delivery_refused_after_its_last_chunk_leaves_the_workers_clean",
    "test_worker_processes_land_what_the_landing_process_lands",
    "test_a_long_lived_process_keeps_a_bounded_number_of_files_open",
    # storage/test_certify.py (400 hypothesis examples), test_published.py, test_retention.py
    "test_the_grammar_certifies_only_what_the_oracle_accepts_and_agrees_on_it",
    "test_a_reader_holding_published_duckdb_never_blocks_a_full_run",
    "test_published_views_show_only_certified_rows",
    "test_what_reaches_behind_the_horizon_is_refused_with_the_reason",
    "test_published_duckdb_answers_as_of_inside_the_horizon_and_refuses_behind_it",
    "test_the_pruned_dates_keep_their_evidence_and_the_state_stays_exact",
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


def on_the_sail_cluster(item: pytest.Item) -> bool:
    """Whether a test runs on the Sail cluster: its server fixture, or a store kind it is
    parametrised with (``stores.CLUSTER``). Every such case is slow: the fast tier never grows
    with the cluster."""
    return "sail_cluster" in getattr(item, "fixturenames", ()) or "sail-cluster" in item.nodeid


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.nodeid.removeprefix("replay_assets_tests/")
        named = getattr(item, "originalname", item.name) in SLOW_TESTS
        if where.startswith(SLOW_MODULES) or named or on_the_sail_cluster(item):
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


@pytest.fixture(scope="session")
def sail_cluster() -> Iterator[str]:
    """A real Sail server in local-cluster mode for the session: a driver and two workers in one
    process (``sail_server.CLUSTER``); its ``sc://`` address."""
    from replay_assets_tests import sail_server

    with sail_server.running(sail_server.CLUSTER) as remote:
        yield remote
