"""A real Sail server for the tests (``pysail``'s Spark Connect server, in this process, on a free
loopback port) and Spark Connect sessions on it: what ``REPLAY_ASSETS_SPARK_REMOTE=local`` will
start for the Spark adapter (docs/deploy.md). ``running(CLUSTER)`` starts Sail's local-cluster
mode instead: a driver and two workers in the server's process, talking over RPC, so every plan
with a shuffle moves data between workers."""

from __future__ import annotations

import os
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
