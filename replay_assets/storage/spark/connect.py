"""The Spark adapter as the settings name it (SPEC 10 "Scale-out"): ``REPLAY_ASSETS_SPARK_REMOTE``
is a Spark Connect address (``sc://HOST:PORT``: a Spark 4 Connect server or a Sail cluster), or
``local``, an embedded Sail server this process starts on a free loopback port the first time it
is asked and stops when it exits. One Spark Connect session per process and warehouse: every
pipeline of the process shares its store (a session's temporary views are per session, and the
adapter's units run one at a time in it)."""

from __future__ import annotations

import atexit
import threading

from pyspark.sql import SparkSession

from replay_assets.storage.spark.store import SparkStore

_LOCK = threading.Lock()
_SERVER: list[str] = []  # the embedded server's address, once started
_STORES: dict[tuple[str, str], SparkStore] = {}


def spark_store(remote: str, root: str) -> SparkStore:
    """The process's store on the Delta warehouse at ``root`` through ``remote``."""
    with _LOCK:
        address = _local_server() if remote == "local" else remote
        store = _STORES.get((address, root))
        if store is None:
            session = SparkSession.builder.remote(address).create()
            store = _STORES[(address, root)] = SparkStore(session, root)
        return store


def _local_server() -> str:
    if not _SERVER:
        from pysail.spark import SparkConnectServer

        server = SparkConnectServer(ip="127.0.0.1", port=0)
        server.start(background=True)
        host, port = server.listening_address
        _SERVER.append(f"sc://{host}:{port}")
        atexit.register(server.stop)
    return _SERVER[0]
