"""The Spark adapter as the settings name it: ``REPLAY_ASSETS_SPARK_REMOTE``
is a Spark Connect address (``sc://HOST:PORT``: a Spark 4 Connect server or a Sail cluster), or
``local``, an embedded Sail server this process starts on a free loopback port the first time it
is asked and stops when it exits. One Spark Connect session per process and warehouse: every
pipeline of the process shares its store (a session's temporary views are per session, and the
adapter's units run one at a time in it). A remote server is reached with a deadline: one that
is down, or accepts connections and never answers, is ``REPLAY_WAREHOUSE_UNREACHABLE``, not a
command that waits on the client's retries. Each session's client is closed when the process
exits: pyspark's own exit hook sends the server a command through its retries, which never end
once the server has stopped (a process that outlives its server would never exit). A session the
server has dropped (idle past its timeout) is replaced when the next unit begins (``SparkStore``)."""

from __future__ import annotations

import atexit
import threading
from urllib.parse import urlsplit

import grpc
from pyspark.sql import SparkSession
from pyspark.sql.connect.client import DefaultChannelBuilder

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.spark.store import SparkStore
from replay_assets.storage.spark.tables import EngineLanding

_LOCK = threading.Lock()
_SERVER: list[str] = []  # the embedded server's address, once started
_STORES: dict[tuple[str, str, EngineLanding | None], SparkStore] = {}


def spark_store(remote: str, root: str, timeout: float, landing: EngineLanding | None = None) -> SparkStore:
    """The process's store on the Delta warehouse at ``root`` through ``remote`` (the engine
    reading the landing area at ``landing``, when set); a server that does not answer within
    ``timeout`` seconds is :class:`ReplayError` (WAREHOUSE_UNREACHABLE)."""
    with _LOCK:
        address = _local_server() if remote == "local" else remote
        store = _STORES.get((address, root, landing))
        if store is None:
            _await_server(address, timeout)
            store = SparkStore(_session(address), root, renew=lambda: _session(address), landing=landing)
            _STORES[(address, root, landing)] = store
        return store


def _session(address: str) -> SparkSession:
    session = SparkSession.builder.remote(address).create()
    atexit.register(_close, session)  # after pyspark's hook of this client, so it runs first
    return session


def _close(session: SparkSession) -> None:
    """Close the session's channel without a call to the server (which may be gone)."""
    session.client.close()


def _local_server() -> str:
    if not _SERVER:
        from pysail.spark import SparkConnectServer

        server = SparkConnectServer(ip="127.0.0.1", port=0)
        server.start(background=True)
        host, port = server.listening_address
        _SERVER.append(f"sc://{host}:{port}")
        atexit.register(server.stop)
    return _SERVER[0]


def _await_server(address: str, timeout: float) -> None:
    """Wait at most ``timeout`` seconds for the server at ``address`` to complete gRPC's
    handshake (its HTTP/2 settings), over the channel the Spark client would build."""
    channel = DefaultChannelBuilder(address).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        where = urlsplit("http" + address[2:]).netloc.rpartition("@")[2]  # never the options (a token)
        raise ReplayError(
            ErrorCode.WAREHOUSE_UNREACHABLE,
            f"the Spark Connect server at {where} (REPLAY_ASSETS_SPARK_REMOTE) did not answer within "
            f"{timeout:g} s (REPLAY_ASSETS_SPARK_CONNECT_TIMEOUT_SECONDS)",
        ) from None
    finally:
        channel.close()
