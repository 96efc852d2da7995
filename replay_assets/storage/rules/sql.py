"""What engine-neutral storage code runs the shared statements through: each engine's unit lends
an ``Sql`` over the tables as it sees them, so an operation made of shared statements and plain
row writes is written once for both engines (``storage/evidence/written_once.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    import polars as pl

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class Sql(Protocol):
    def rows(self, statement: str, **params: Any) -> list[dict[str, Any]]:
        """A shared statement (DuckDB's dialect, ``$name`` parameters), its rows by column name."""
        ...

    def frame(self, statement: str, **params: Any) -> pl.DataFrame:
        """A shared statement's rows as a polars frame (through Arrow, for many rows)."""
        ...

    def keep(self, name: str, statement: str, **params: Any) -> None:
        """A shared statement's rows computed now and kept as the relation ``name`` that later
        statements of this unit read (a temporary table): later writes do not change it."""
        ...

    def insert_from(self, table: str, statement: str, **params: Any) -> int:
        """The rows of a shared statement appended to ``table``, columns by name (one left out
        is null), computed by the engine without coming to this process; returns their number."""
        ...

    def delete(
        self, table: str, statement: str, *, on: Sequence[str], where: str = "", **params: Any
    ) -> None:
        """The rows of ``table`` whose ``on`` columns equal those of a row of a shared
        statement removed; ``where``: a further condition on the table's row ``t`` (a
        constant of the caller's module)."""
        ...

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]] | pl.DataFrame) -> None:
        """``rows`` appended to ``table``, columns by name (a column left out takes its default);
        a frame's rows through Arrow, never one by one."""
        ...

    def upsert(
        self, table: str, rows: Sequence[Mapping[str, Any]], *, on: Sequence[str], keep: Sequence[str] = ()
    ) -> None:
        """``rows`` inserted, or replacing the row with the same ``on`` columns; a column of
        ``keep`` keeps its recorded value where the new row brings none."""
        ...


def identifiers(*names: str) -> tuple[str, ...]:
    """``names`` checked as plain table or column names (they come from code, never from input;
    checked all the same before they reach a statement's text)."""
    for name in names:
        if not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"not a plain identifier: {name!r}")
    return names


class HoldsSql(Protocol):
    @property
    def sql(self) -> Sql: ...


P = ParamSpec("P")
R = TypeVar("R")
H = TypeVar("H", bound=HoldsSql)


def on_sql(operation: Callable[Concatenate[Sql, P], R]) -> Callable[Concatenate[H, P], R]:
    """``operation(sql, ...)`` as a method ``holder.operation(...)`` on ``holder.sql``: how either
    engine's unit offers an operation written once."""

    def method(holder: H, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return operation(holder.sql, *args, **kwargs)

    return method
