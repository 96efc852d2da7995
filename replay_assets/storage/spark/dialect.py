"""Shared statements for Spark. Statements shared by both adapters are written once in DuckDB's
dialect, in SQL both engines can run (named ``GROUP BY`` columns; Sail 0.7 resolves neither
``GROUP BY ALL`` nor ``QUALIFY``), and rendered by SQLGlot (``rules/render.py``): ``shared`` plans
one in a session, ``over_tables`` renders one over the tables as a unit sees them."""

from __future__ import annotations

import functools
import re
from typing import Any

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import expressions as exp

from replay_assets.storage.rules.render import Engine, render
from replay_assets.storage.rules.schema import TABLES

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def shared(spark: SparkSession, statement: str, args: dict[str, Any] | None = None) -> DataFrame:
    """A shared statement (``storage/rules``, DuckDB's dialect) rendered for Spark and planned in
    ``spark`` with its named parameters ``args``; lazy, as every Spark frame."""
    return spark.sql(render(statement, Engine.SPARK), args=args)


@functools.cache
def over_tables(statement: str) -> str:
    """A shared statement rendered for Spark with each warehouse table it reads as a ``{table}``
    placeholder, which the unit's ``sql`` fills in with the table as the unit sees it. A statement
    may name a table as DuckDB reads it (``FROM costs``) or already as a placeholder."""
    stand_in = "__table_{}__"
    text = _PLACEHOLDER.sub(lambda m: stand_in.format(m[1]) if m[1] in TABLES else m[0], statement)
    tree = sqlglot.parse_one(render(text, Engine.SPARK), read="spark")
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table.name in TABLES and table.name not in ctes and not table.db:
            table.set("this", exp.to_identifier(stand_in.format(table.name)))
    return re.sub(r"__table_(\w+)__", r"{\1}", tree.sql(dialect="spark"))
