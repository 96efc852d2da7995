"""A real Sail server for the tests (``pysail``'s Spark Connect server, in this process, on a free
loopback port) and Spark Connect sessions on it: what ``REPLAY_ASSETS_SPARK_REMOTE=local`` will
start for the Spark adapter (docs/deploy.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pysail.spark import SparkConnectServer
from pyspark.sql import SparkSession


@contextmanager
def running() -> Iterator[str]:
    """Start the server, yield its ``sc://`` address, stop it after."""
    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    try:
        host, port = server.listening_address
        yield f"sc://{host}:{port}"
    finally:
        server.stop()


def session(remote: str) -> SparkSession:
    """A new Spark Connect session (its own temporary views and settings) on ``remote``."""
    return SparkSession.builder.remote(remote).create()
