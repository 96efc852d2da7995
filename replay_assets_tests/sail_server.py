"""A real Sail server for the tests (``pysail``'s Spark Connect server, in this process, on a free
loopback port) and Spark Connect sessions on it: what ``REPLAY_ASSETS_SPARK_REMOTE=local`` will
start for the Spark adapter (docs/deploy.md). ``running(CLUSTER)`` starts Sail's local-cluster
mode instead: a driver and two workers in the server's process, talking over RPC, so every plan
with a shuffle moves data between workers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pysail.spark import SparkConnectServer
from pyspark.sql import SparkSession

# Sail reads its settings from the environment when a server starts. Each worker's default of 8
# task slots is too few: a Delta MERGE takes a slot per file of its target, and the journal's
# tables grow a file per commit.
CLUSTER = {
    "SAIL_MODE": "local-cluster",
    "SAIL_CLUSTER__WORKER_INITIAL_COUNT": "2",
    "SAIL_CLUSTER__WORKER_MAX_COUNT": "2",
    "SAIL_CLUSTER__WORKER_TASK_SLOTS": "64",
}


@contextmanager
def running(config: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start the server with Sail's settings ``config`` (e.g. :data:`CLUSTER`), yield its ``sc://``
    address, stop it after. The settings are in the environment only while the server starts."""
    config = config or {}
    saved = {name: os.environ.get(name) for name in config}
    try:
        os.environ.update(config)
        server = SparkConnectServer(ip="127.0.0.1", port=0)
        server.start(background=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        host, port = server.listening_address
        yield f"sc://{host}:{port}"
    finally:
        server.stop()


def session(remote: str) -> SparkSession:
    """A new Spark Connect session (its own temporary views and settings) on ``remote``."""
    return SparkSession.builder.remote(remote).create()


# a Sail server in a process of its own: prints its port, serves until its stdin closes
_STANDALONE = (
    "import sys\n"
    "from pysail.spark import SparkConnectServer\n"
    "server = SparkConnectServer(ip='127.0.0.1', port=0)\n"
    "server.start(background=True)\n"
    "print(server.listening_address[1], flush=True)\n"
    "sys.stdin.read()\n"
    "server.stop()\n"
)


@contextmanager
def standalone() -> Iterator[str]:
    """A Sail server in a child process (the engine apart from this client, as in a
    deployment); its ``sc://`` address. Stopped after."""
    child = subprocess.Popen(
        [sys.executable, "-c", _STANDALONE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        yield f"sc://127.0.0.1:{int(child.stdout.readline())}"
    finally:
        child.stdin.close()
        child.wait(timeout=60)
