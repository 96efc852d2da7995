"""The tables written once (``storage/rules/schema.py``) are the tables DuckDB's migrations
declare: every table's columns, types and primary key, and the Delta schema the Spark adapter
builds from the rules equals the Arrow schema DuckDB gives for the same table."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from replay_assets.storage.db.migrations import LANDING_VIEWS
from replay_assets.storage.db.warehouse import migrate
from replay_assets.storage.rules.schema import KEYS, TABLES, columns
from replay_assets.storage.spark import schema

# DuckDB's register of its own segment files: the Spark adapter lands every row into Delta tables
DUCKDB_ONLY = {"landing_segments"}
NAMED = {table: view for view, table in LANDING_VIEWS.items()}  # a table behind a view: the view's name
SHORT = {"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ"}


@pytest.fixture(scope="module")
def migrated() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    migrate(con)
    yield con
    con.close()


def _duckdb_tables(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    found = con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()
    return {NAMED.get(str(r[0]), str(r[0])): str(r[0]) for r in found if r[0] not in DUCKDB_ONLY}


def test_the_rules_name_every_table_duckdb_declares(migrated: duckdb.DuckDBPyConnection) -> None:
    assert sorted(_duckdb_tables(migrated)) == sorted(TABLES)


def test_each_table_has_the_rules_columns_types_and_key(migrated: duckdb.DuckDBPyConnection) -> None:
    declared = {}
    for name, table in _duckdb_tables(migrated).items():
        found = migrated.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
        declared[name] = tuple((str(c), SHORT.get(str(t), str(t))) for c, t in found)
    assert declared == {table: columns(table) for table in TABLES}
    keys = migrated.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE constraint_type = 'PRIMARY KEY'"
    ).fetchall()
    assert {NAMED.get(str(t), str(t)): tuple(c) for t, c in keys} == KEYS


def test_the_delta_schema_equals_duckdbs_for_every_table(migrated: duckdb.DuckDBPyConnection) -> None:
    arrow = {
        name: migrated.sql(f'SELECT * FROM "{table}" LIMIT 0').arrow().schema
        for name, table in _duckdb_tables(migrated).items()
    }
    assert set(arrow) == set(schema.schemas())
    assert {n: s for n, s in arrow.items() if not s.equals(schema.schemas()[n])} == {}
