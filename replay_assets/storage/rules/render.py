"""A shared statement for the engine that runs it. Statements are written once, in DuckDB's
dialect; SQLGlot transpiles them to Spark's (as SQLMesh renders its models), so a second engine
adds its dialect, not a second copy of each rule. What SQLGlot leaves alone and Spark does not
parse is removed here: ``MATERIALIZED`` hints on common expressions (Spark plans them itself)."""

from __future__ import annotations

import enum
import functools

import sqlglot
from sqlglot import expressions as exp


class Engine(enum.StrEnum):
    DUCKDB = "duckdb"
    SPARK = "spark"


@functools.lru_cache(maxsize=256)
def render(sql: str, engine: Engine) -> str:
    """``sql`` (one statement in DuckDB's dialect) as ``engine`` runs it. DuckDB gets the text
    unchanged; Spark gets SQLGlot's transpilation, with its named parameters marked ``:name``
    (DuckDB's ``$name``) and ``?`` kept. Deterministic, so a rendering can be cached."""
    if engine is Engine.DUCKDB:
        return sql
    tree = sqlglot.parse_one(sql, read="duckdb")
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    return tree.sql(dialect="spark")
