"""Binding a storage function over a DuckDB connection as a method of an object that holds the
connection (the DuckDB adapter's units and steps), typed so that mypy checks each binding
against the port it implements."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

import duckdb

from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.rules.sql import Sql

P = ParamSpec("P")
R = TypeVar("R")


class HoldsConnection(Protocol):
    con: duckdb.DuckDBPyConnection


H = TypeVar("H", bound=HoldsConnection)


def bound(
    operation: Callable[Concatenate[duckdb.DuckDBPyConnection, P], R],
) -> Callable[Concatenate[H, P], R]:
    """``operation(con, ...)`` as a method ``holder.operation(...)`` on ``holder.con``."""

    def method(holder: H, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return operation(holder.con, *args, **kwargs)

    return method


class OnConnection:
    """What holds the connection its bound methods run on, and the ``Sql`` over it that the
    operations written once for both engines take (``on_sql``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.sql: Sql = DuckDBSql(con)
