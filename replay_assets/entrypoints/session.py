"""A home with its pipeline, Dagster definitions and instance: what the CLI and demo drive."""

import getpass
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from replay_assets.core.config import Settings
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.lanes import BACKFILL, LANE_TAG
from replay_assets.definitions import build_definitions
from replay_assets.entrypoints.idle_run import RunSummary, exclusive_run
from replay_assets.entrypoints.runner import (
    QUIET,
    cli_tags,
    instance_for,
    refuse_if_daemon,
    run_pending,
)
from replay_assets.storage.db.warehouse import query_frame
from replay_assets.usecases.backfill_note import record_backfill
from replay_assets.usecases.context import Pipeline


@dataclass
class Session:
    settings: Settings
    dagster_home: Path
    pipeline: Pipeline = field(init=False)
    _defs: dg.Definitions | None = field(default=None, init=False)
    _instance: dg.DagsterInstance | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.pipeline = Pipeline(self.settings)

    @property
    def defs(self) -> dg.Definitions:
        if self._defs is None:
            self._defs = build_definitions(self.settings)
        return self._defs

    @property
    def instance(self) -> dg.DagsterInstance:
        if self._instance is None:
            self._instance = instance_for(self.dagster_home, self.settings.dagster_yaml)
        return self._instance

    def run(self, progress: Callable[[str], None] = lambda _: None) -> RunSummary:
        self.pipeline.require_own_files()
        with exclusive_run(self.settings.home):
            refuse_if_daemon(self.instance)
            return run_pending(self.defs, self.instance, self.pipeline, progress)

    def backfill_in_process(self, partitions: list[str], note: str) -> list[bool]:
        """The runs of a load-date backfill, executed here in order in the backfill lane and tagged
        as the CLI's (no daemon needed: the demo's rehearsal). They carry no ``dagster/backfill``
        tag, since no Dagster backfill launched them; ``replay-assets backfill`` launches a real
        one. The note is recorded under ``replay/backfill_note``'s id. Returns each run's success."""
        job = self.defs.resolve_job_def("apply_load_date_job")
        backfill_id = sha256_text(canonical_json([partitions, note]))[:12]
        tags = {**cli_tags(), LANE_TAG: BACKFILL, "replay/backfill_note": backfill_id}
        record_backfill(
            self.pipeline,
            backfill_id,
            asset="current_orders",
            first=partitions[0],
            last=partitions[-1],
            note=note,
            operator=getpass.getuser(),
        )
        return [
            job.execute_in_process(
                run_config=QUIET, instance=self.instance, partition_key=key, tags=tags, raise_on_error=False
            ).success
            for key in partitions
        ]

    def run_in_subprocess(self, fail_point: str | None = None, env: Mapping[str, str] | None = None) -> int:
        """``replay-assets run`` in a child process (crash tests kill it at ``fail_point``), in
        this process's environment or ``env``."""
        env = {
            **(os.environ if env is None else env),
            "REPLAY_ASSETS_HOME": str(self.settings.home),
            "DAGSTER_HOME": str(self.dagster_home),
            # the child's warehouse is this session's, whatever the environment says
            "REPLAY_ASSETS_WAREHOUSE": self.settings.warehouse,
            "REPLAY_ASSETS_SPARK_REMOTE": self.settings.spark_remote,
        }
        if self.settings.delta_root:
            env["REPLAY_ASSETS_DELTA_ROOT"] = self.settings.delta_root
        if self.settings.spark_landing_uri:
            env["REPLAY_ASSETS_SPARK_LANDING_URI"] = self.settings.spark_landing_uri
        if self.settings.fixed_now:
            env["REPLAY_ASSETS_NOW"] = self.settings.fixed_now.isoformat()
        if fail_point:
            env["REPLAY_ASSETS_FAIL_POINT"] = fail_point
        cmd = [
            sys.executable,
            "-m",
            "replay_assets.entrypoints.cli",
            "run",
            "--home",
            str(self.settings.home),
        ]
        return subprocess.run(cmd, env=env, capture_output=True, check=False).returncode

    def query(self, sql: str, params: list[object] | None = None) -> list[dict[str, Any]]:
        with self.pipeline.warehouse.connect() as con:
            return query_frame(con, sql, params).to_dicts()

    def close(self) -> None:
        if self._instance is not None:
            self._instance.dispose()
            self._instance = None
