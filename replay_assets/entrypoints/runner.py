"""The headless daemon: evaluate the sensors and execute what they request, in-process, on the
home's Dagster instance, until nothing is pending (``replay-assets run``)."""

import datetime as dt
import getpass
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path

import dagster as dg

from replay_assets.core.config import SettingsError
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.defs.catch_up import CATCH_UP_JOB
from replay_assets.defs.resources import ReplayResource
from replay_assets.entrypoints.idle_run import (
    PROJECT_INSTANCE_CONFIG,
    RunSummary,
    forget_settled,
    instance_files,
    record_settled,
)
from replay_assets.storage.home.files import atomic_replace
from replay_assets.storage.landing import prefetch
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.prune import prune
from replay_assets.usecases.recover import finish_in_doubt
from replay_assets.usecases.sensor_cursors import cursor, save_cursor

SENSORS = ("source_manifest_sensor", "restatement_sensor")
CATCH_UP_SENSOR = SENSORS[0]  # its requests of consecutive load dates run as one catch-up run
LAUNCHED_BY_TAG = "replay/launched_by"
REQUESTED_BY_TAG = "replay/requested_by"  # the sensor whose evaluation asked for the run
REQUEST_KEY_TAG = "replay/request_key"  # the request's key (what it asked for), kept for tracing
USER_TAG = "user"  # the tag the UI's "Launched by" column shows as the user who launched a run
HEARTBEAT_FRESH_SECONDS = 60
PREFETCH_FOLDER = ".prefetch"  # the next load date's files prepared ahead (under the run lock)
# Failures are reported by the summary; their traces stay in the run's event log for the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# sha256 of each dagster.yaml an earlier version of the project wrote into a home: a home that
# still holds one of them unchanged gets the current file (a file edited since is the operator's
# and stays). Listed newest first: the file before the pooled event log (replay_assets/defs/instance.py)
EARLIER_INSTANCE_FILES = frozenset(
    {
        "f1abc9a6a127ea143d162c816af9bf3fc4bc5db6277a029fb06fc94cb953fe68",
        "150872085756a87b9cc91cfd93c042768edeeb1ee695da3146100d0d08c9ddcb",
        "d838ab7228e3b635aa370ea8b44b0885876d351cbd18afa32a53755016b7d61c",
        "4753121a4784ac1d9be9a3752a052f36a2f335ec636c34a2620f8e2eb34d6b4a",
        "7d72949fbd5e6b0fc5cb93687aff2a483f557b0dc42048f0c6ff6087089e3029",
        "eff6cb6fe591f0322f3070275f6234caf1165da09a9aa18a0b1a05027ccd08aa",
    }
)
# the workspace the CLI's backfills and daemon load: the installed package's definitions, so
# they work wherever the package is installed (no repository checkout needed)
WORKSPACE = """# written by replay-assets
load_from:
  - python_module:
      module_name: replay_assets.definitions
"""


def instance_for(dagster_home: Path, config: Path | None = None) -> dg.DagsterInstance:
    """The home's persistent instance. Its ``dagster.yaml`` is the project's embedded default
    (written when absent, or when the file is one an earlier version wrote, unchanged) or, with
    ``config`` (``REPLAY_ASSETS_DAGSTER_YAML``, e.g.
    ``deploy/postgres/dagster.yaml``), that file, installed whenever it differs: the daemon, the
    webserver and ``replay-assets ui`` on this Dagster home then load the same instance."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    target = dagster_home / "dagster.yaml"
    if config is not None:
        try:
            wanted = config.read_bytes()
        except OSError:
            raise SettingsError(f"REPLAY_ASSETS_DAGSTER_YAML: {config} cannot be read") from None
        if not target.exists() or target.read_bytes() != wanted:
            _install(target, wanted)
    elif not target.exists() or hashlib.sha256(target.read_bytes()).hexdigest() in EARLIER_INSTANCE_FILES:
        _install(target, PROJECT_INSTANCE_CONFIG.read_bytes())
    workspace = dagster_home / "workspace.yaml"
    if not workspace.exists():
        workspace.write_text(WORKSPACE, encoding="utf-8")
    try:
        return dg.DagsterInstance.from_config(str(dagster_home))
    except dg.DagsterInvalidConfigError as invalid:  # e.g. DAGSTER_PG_URL unset: names the setting
        reasons = "; ".join(" ".join(e.message.split("Stack Trace:")[0].split()) for e in invalid.errors)
        raise SettingsError(f"the Dagster instance file {target}: {reasons}") from None
    except Exception as error:
        # dagster-postgres is imported only by an instance that uses it (its import is a
        # noticeable part of every `run`), so its exception class is looked up, not imported
        postgres = sys.modules.get("dagster_postgres.utils")
        if postgres is None or not isinstance(error, postgres.DagsterPostgresException):
            raise
        raise ReplayError(  # the library's message may carry the server's words; ours names no URL
            ErrorCode.INSTANCE_UNREACHABLE,
            f"the Dagster instance of {target} keeps its storage on PostgreSQL, which did not answer "
            "or could not create its tables: check DAGSTER_PG_URL (host, port, credentials)",
        ) from None


def _install(target: Path, content: bytes) -> None:
    """``atomic_replace`` from a temporary file of this call's own: two commands installing at
    once each rename a whole file (``atomic_write``'s one temporary name would be shared)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        atomic_replace(Path(tmp), target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def refuse_if_daemon(instance: dg.DagsterInstance) -> None:
    name = fresh_heartbeat(instance)
    if name is not None:
        raise ReplayError(
            ErrorCode.DAEMON_RUNNING, f"the {name} daemon heartbeat is fresh: the daemon runs this instance"
        )


def fresh_heartbeat(instance: dg.DagsterInstance) -> str | None:
    """The name of a daemon whose heartbeat is under ``HEARTBEAT_FRESH_SECONDS`` old, if any."""
    now = time.time()
    for name, beat in instance.get_daemon_heartbeats().items():
        if now - beat.timestamp < HEARTBEAT_FRESH_SECONDS:
            return str(name)
    return None


def active_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(
        instance.get_runs(
            filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING])
        )
    )


def settle_instance(home: Path, dagster_home: Path, warehouse: list[list[object]]) -> bool:
    """After a full ``run``, with its instance closed: record the instance's files as settled
    (``idle_run.py``) when no run is STARTED or STARTING and no daemon's heartbeat is fresh,
    and nothing wrote to the instance while that was checked, with the published copy as the
    ``run``'s refresh left it (``warehouse``: the warehouse's files before that refresh); else
    forget any record. Returns whether it recorded."""
    before = instance_files(dagster_home)
    instance = instance_for(dagster_home)
    try:
        settled = not active_runs(instance) and fresh_heartbeat(instance) is None
    finally:
        instance.dispose()
    after = instance_files(dagster_home)
    if settled and before == after:
        record_settled(home, dagster_home, after, warehouse)
        return True
    forget_settled(home)
    return False


def fail_orphans(instance: dg.DagsterInstance) -> int:
    """Runs left STARTED by a killed process: mark failed and free their pool slots."""
    orphans = active_runs(instance)
    for run in orphans:
        instance.report_run_failed(run, "orphaned: its process died; marked failed by replay-assets run")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
    return len(orphans)


def run_pending(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    pipeline: Pipeline,
    progress: Callable[[str], None] = lambda _: None,
    max_runs: int = 10_000,
    sensors: Sequence[str] = SENSORS,
) -> RunSummary:
    """Evaluate the sensors and execute their requests until none is left. Pending work comes
    from the warehouse, so a daemon on the same instance finds nothing left of what ran here; a
    request that already failed in this invocation is not retried."""
    summary = RunSummary(
        orphans_failed=fail_orphans(instance), finished_in_doubt=len(finish_in_doubt(pipeline))
    )
    prune(pipeline)  # a pruning a kill cut short completes before anything else is applied
    tried: set[str] = set()
    resource = ReplayResource.for_settings(pipeline.settings)
    # runs execute in this process, one after another: landing a load date can have the next one
    # prepared while it applies (DuckDB's landing only; ``storage/landing/prefetch.py``)
    duckdb = pipeline.settings.warehouse == "duckdb"
    ahead = prefetch.enabled(pipeline.settings.home / PREFETCH_FOLDER) if duckdb else nullcontext()
    with ahead:
        while len(summary.runs) < max_runs:
            with pipeline.store.hold():
                requests = [
                    (name, rr)
                    for name in sensors
                    for rr in _evaluate(defs, instance, pipeline=pipeline, resource=resource, name=name)
                ]
            fresh = [(name, rr) for name, rr in requests if rr.run_key not in tried]
            if not fresh:
                return summary
            name, request = fresh[0]
            chain = _ready_chain(fresh) if duckdb else [request]
            tried.update(str(r.run_key) for r in chain)
            job = CATCH_UP_JOB if len(chain) > 1 else None
            request = catch_up_request(chain) if job else request
            with pipeline.store.hold():  # one warehouse connection for the run (not one a transaction)
                run = _execute(defs, instance, sensor_name=name, request=request, progress=progress, job=job)
            summary.runs.append(run)
    return summary


def _ready_chain(fresh: Sequence[tuple[str, dg.RunRequest]]) -> list[dg.RunRequest]:
    """The first request and the load dates requested after it, day after day: one catch-up run
    applies them in order (Spark keeps a run per load date)."""
    chain: list[dg.RunRequest] = []
    for name, request in fresh:
        key = request.partition_key
        if (
            name != CATCH_UP_SENSOR
            or key is None
            or (chain and key != _next_day(str(chain[-1].partition_key)))
        ):
            break
        chain.append(request)
    return chain or [fresh[0][1]]


def catch_up_request(chain: Sequence[dg.RunRequest]) -> dg.RunRequest:
    """One run of the load dates ``chain`` requested one by one: its key names them all (the
    daemon's per-date keys stay what the sensor says), its tags the range (``replay/lane`` kept)."""
    first, last = str(chain[0].partition_key), str(chain[-1].partition_key)
    key = hashlib.sha256("\n".join(str(r.run_key) for r in chain).encode()).hexdigest()[:24]
    range_tags = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
    return dg.RunRequest(run_key=f"catch_up:{first}:{last}:{key}", tags={**chain[0].tags, **range_tags})


def _next_day(day: str) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()


def cli_tags() -> Mapping[str, str]:
    """The tags of a run the command line executes itself: launched by the CLI, for its user."""
    return {LAUNCHED_BY_TAG: "cli", USER_TAG: getpass.getuser()}


def _evaluate(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    pipeline: Pipeline,
    resource: ReplayResource,
    name: str,
) -> list[dg.RunRequest]:
    sensor = defs.resolve_sensor_def(name)
    current = cursor(pipeline, name)
    with dg.build_sensor_context(
        instance=instance, cursor=current, resources={"replay": resource}, sensor_name=name
    ) as context:
        result = sensor(context)
    if isinstance(result, dg.SensorResult):
        if result.cursor is not None and result.cursor != current:
            save_cursor(pipeline, name, result.cursor)
        return list(result.run_requests or [])
    return []


def _execute(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    sensor_name: str,
    request: dg.RunRequest,
    progress: Callable[[str], None],
    job: str | None = None,
) -> tuple[str, str, bool, float]:
    """One requested run, executed here and tagged as the CLI's: the sensor only says what is
    pending, so the run names it as the requester, never with the tags by which the UI shows a
    sensor (or a backfill) as having launched it."""
    job_def = defs.resolve_job_def(job or str(defs.resolve_sensor_def(sensor_name).job_name))
    tags = {
        **request.tags,
        **cli_tags(),
        REQUESTED_BY_TAG: sensor_name,
        REQUEST_KEY_TAG: str(request.run_key),
    }
    started = time.monotonic()
    result = job_def.execute_in_process(
        run_config=QUIET,
        instance=instance,
        partition_key=request.partition_key,
        tags=tags,
        raise_on_error=False,
    )
    seconds = time.monotonic() - started
    label = str(request.run_key).rsplit(":", 1)[0]
    progress(f"{label:<40} {'ok' if result.success else 'FAILED':<7} {seconds:6.2f} s")
    return sensor_name, str(request.run_key), result.success, seconds
