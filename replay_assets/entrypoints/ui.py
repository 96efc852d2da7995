"""``replay-assets ui``: the Dagster UI (webserver and daemon, ``dagster dev``) on a home, and on
an empty home the sample: delivered as files first, applied by the daemon's sensors, its incident
played by a supervisor thread once they are done (``demo/incident.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.demo.incident import play_incident
from replay_assets.demo.sample import Sample
from replay_assets.entrypoints.session import Session
from replay_assets.storage.home.home_files import occupants


def refuse_unless_empty(home: Path) -> None:
    """The sample brings its own settings and history: a home holding anything is refused it
    (exit 2) before anything in it changes."""
    found = occupants(home)
    if found:
        raise ReplayError(
            ErrorCode.USAGE,
            f"{home} is not empty (it holds {', '.join(found)}): `replay-assets ui` writes its sample "
            "only into an empty home; use --no-sample to open this home as it is",
        )


def dagster_dev(settings: Settings, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The command and environment of the UI: ``dagster dev`` on the home's own instance and
    workspace (``$HOME/dagster``, whatever ``DAGSTER_HOME`` says), so the UI shows this home."""
    dagster = str(Path(sys.executable).with_name("dagster"))
    workspace = str(settings.dagster_home.resolve() / "workspace.yaml")
    env = {
        **os.environ,
        "REPLAY_ASSETS_HOME": str(settings.home.resolve()),
        "DAGSTER_HOME": str(settings.dagster_home.resolve()),
    }
    return [dagster, "dev", "-w", workspace, "-h", host, "-p", str(port)], env


def serve(settings: Settings, host: str, port: int, sample: Sample | None) -> int:
    """Run the UI until it exits (Ctrl-C reaches it too: same process group); with a delivered
    ``sample``, play its incident beside the UI. Returns the UI's exit status."""
    cmd, env = dagster_dev(settings, host, port)
    ui = subprocess.Popen(cmd, env=env)
    signal.signal(signal.SIGTERM, lambda signum, frame: ui.send_signal(signum))
    if sample is not None:
        threading.Thread(target=_play, args=(settings, sample, port), name="sample", daemon=True).start()
    try:
        return ui.wait()
    except KeyboardInterrupt:  # the UI got the same interrupt and stops by itself
        return ui.wait()


def _play(settings: Settings, sample: Sample, port: int) -> None:
    """The incident on its own session (the thread's own instance handle)."""
    session = Session(settings, settings.dagster_home)
    try:
        play_incident(session, sample, port, _say)
    except Exception as error:  # the UI keeps running; what the sample could not do is said
        _say(f"sample: the incident was not played: {type(error).__name__}: {error}")
    finally:
        session.close()


def _say(line: str) -> None:
    print(line, flush=True)
