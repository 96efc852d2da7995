"""``replay-assets ui`` (``dagster dev``: webserver and daemon) as a child process group on
loopback, for the browser tests: the command a newcomer runs, on a temporary home.

The server uses the home's own Dagster home (``HOME/dagster``, with the project's ``dagster.yaml``
and a workspace written by ``replay-assets ui``); an empty home gets the sample scenario unless
``sample`` is off; every wait polls with a deadline; ``stop`` always ends the whole group.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from replay_assets_tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
POLL_SECONDS = 0.5
T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` at the deadline.
    Waiting on other processes (server, daemon, runs): polling is the only signal there is."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL_SECONDS)


@dataclass
class DagsterDev:
    """One ``replay-assets ui`` on its own home and port."""

    home: Path
    log_path: Path
    env_extra: Mapping[str, str]
    sample: bool = False
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_"))},
            **self.env_extra,
        }
        cli = Path(sys.executable).with_name("replay-assets")
        cmd = [str(cli), "ui", "--home", str(self.home), "--host", "127.0.0.1", "--port", str(self.port)]
        log = open(self.log_path, "wb")  # the child writes it until stop()
        self.process = subprocess.Popen(
            [*cmd, *([] if self.sample else ["--no-sample"])],
            cwd=self.log_path.parent,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def stop(self) -> None:
        """End the whole process group: webserver, daemon, code servers and run workers.
        ``dagster dev`` exits on SIGTERM but may leave children behind, so SIGKILL follows."""
        if self.process is None:
            return
        pgid = self.process.pid  # start_new_session: the child leads its own group
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process = None

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            payload: dict[str, Any] = json.load(response)
        if payload.get("errors"):
            raise AssertionError(f"GraphQL errors: {payload['errors']}")
        return dict(payload["data"])

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"dagster dev exited with {self.process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{self.url}/server_info", timeout=5) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def _location_loaded(self) -> bool:
        data = self.graphql(
            "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus "
            "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
        )
        entries = data["workspaceOrError"].get("locationEntries") or []
        errors = [
            e["locationOrLoadError"]
            for e in entries
            if e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError"
        ]
        if errors:
            raise AssertionError(f"code location failed to load: {errors[0]['message']}")
        return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)

    def _daemons_healthy(self) -> bool:
        data = self.graphql(
            "{ instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } } }"
        )
        statuses = data["instance"]["daemonHealth"]["allDaemonStatuses"]
        wanted = {"SENSOR", "QUEUED_RUN_COORDINATOR", "BACKFILL"}
        return wanted <= {s["daemonType"] for s in statuses if s["healthy"]}

    @contextmanager
    def running(self) -> Iterator["DagsterDev"]:
        """Started and ready for the block; the whole process group ends after it, whatever happens."""
        self.start()
        try:
            self.wait_ready()
            yield self
        finally:
            self.stop()

    def wait_ready(self, timeout: float = 120) -> None:
        """The webserver answers, the code location is loaded, and the daemons beat."""
        wait_for(self._answers, timeout, f"dagster dev to answer on {self.url}")
        wait_for(self._location_loaded, timeout, "the replay_assets code location to load")
        wait_for(self._daemons_healthy, timeout, "the sensor, run queue and backfill daemons")
        # the first-visit "Join the Dagster community" dialog would cover the page on loopback
        self.graphql("mutation { setNuxSeen }")
