"""DuckDB's ``Sql``: rows by column name, one statement for any number of rows, an upsert that
keeps a recorded value where the new row brings none, and refusals of what would be ambiguous."""

from __future__ import annotations

import duckdb
import pytest

from replay_assets.storage.db.sql import DuckDBSql


def _sql() -> DuckDBSql:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, v BIGINT, good VARCHAR)")
    return DuckDBSql(con)


def test_an_upsert_replaces_by_key_and_keeps_what_the_new_row_does_not_bring() -> None:
    sql = _sql()
    sql.insert("t", [{"k": "a", "v": 1, "good": "g1"}, {"k": "b", "v": 2, "good": None}])
    sql.upsert(
        "t", [{"k": "a", "v": 10, "good": None}, {"k": "c", "v": 3, "good": "g3"}], on=("k",), keep=("good",)
    )
    found = sql.rows("SELECT k, v, good FROM t WHERE v >= $least ORDER BY k", least=2)
    assert found == [
        {"k": "a", "v": 10, "good": "g1"},
        {"k": "b", "v": 2, "good": None},
        {"k": "c", "v": 3, "good": "g3"},
    ]


def test_an_upsert_of_keys_alone_leaves_a_recorded_row_as_it_was() -> None:
    sql = _sql()
    sql.insert("t", [{"k": "a", "v": 1, "good": "g1"}])
    sql.upsert("t", [{"k": "a"}, {"k": "b"}], on=("k",))
    assert sql.rows("SELECT k, v FROM t ORDER BY k") == [{"k": "a", "v": 1}, {"k": "b", "v": None}]


def test_rows_naming_different_columns_or_a_name_that_is_not_plain_are_refused() -> None:
    sql = _sql()
    with pytest.raises(ValueError, match="different columns"):
        sql.insert("t", [{"k": "a", "v": 1}, {"k": "b", "good": "x"}])
    with pytest.raises(ValueError, match="plain identifier"):
        sql.insert("t", [{"k; DROP TABLE t": "a"}])
    assert sql.rows("SELECT count(*) AS n FROM t") == [{"n": 0}]
