"""The warehouse's tables on Delta, derived from the DuckDB migrations: one schema, two engines.

The migrations (``storage/db/migrations.py``) stay the only place a table is declared. This
module runs them in an in-memory DuckDB and takes each table's Arrow schema, so a column added
there reaches the Delta tables without a second declaration (a table DuckDB keeps behind a view
is the Delta table of the view's name). Delta has no primary keys: the
Spark unit keeps each key unique itself (``KEYS`` names them, read from the same migrations).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import duckdb
import pyarrow as pa

from replay_assets.storage.db.migrations import LANDING_VIEWS
from replay_assets.storage.db.warehouse import migrate


@functools.cache
def _migrated() -> tuple[Mapping[str, pa.Schema], Mapping[str, tuple[str, ...]]]:
    con = duckdb.connect()
    try:
        migrate(con)
        names = [
            str(r[0])
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_name"
            ).fetchall()
        ]
        # DuckDB's landing tables behind the views ``raw_receipts`` and ``staged_events`` are Delta
        # tables of those names (schema v12); the register of DuckDB's segment files (v13) has no
        # Delta table: the Spark adapter lands every row into its Delta tables
        named = {table: view for view, table in LANDING_VIEWS.items()}
        names = [name for name in names if name != "landing_segments"]
        schemas = {
            named.get(name, name): con.sql(f'SELECT * FROM "{name}" LIMIT 0').arrow().schema for name in names
        }
        keys = {
            named.get(str(table), str(table)): tuple(str(c) for c in columns)
            for table, columns in con.execute(
                "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                "WHERE constraint_type = 'PRIMARY KEY'"
            ).fetchall()
        }
    finally:
        con.close()
    return schemas, keys


def schemas() -> Mapping[str, pa.Schema]:
    """Every warehouse table's columns, as Arrow types, by table name."""
    return _migrated()[0]


def keys() -> Mapping[str, tuple[str, ...]]:
    """The primary key of every table that has one."""
    return _migrated()[1]
