"""Loopback ports for the servers the tests start (webserver, daemon, PostgreSQL, Dagster dev)."""

import socket


def free_port() -> int:
    """A port nobody listens on now (the kernel picks it; loopback only). Another process may
    take it before the caller binds it: a server that must have it retries (``postgres_server``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
