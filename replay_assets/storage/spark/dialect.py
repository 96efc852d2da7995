"""Shared statements for Spark. Statements shared by both adapters are written once in DuckDB's
dialect, in SQL both engines can run (named ``GROUP BY`` columns; Sail 0.7 resolves neither
``GROUP BY ALL`` nor ``QUALIFY``), and rendered by SQLGlot (``rules/render.py``): ``shared`` plans
one in a session, ``over_tables`` renders one whose ``{table}`` names a unit fills in."""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.render import Engine, render


def shared(spark: SparkSession, statement: str, args: dict[str, Any] | None = None) -> DataFrame:
    """A shared statement (``storage/rules``, DuckDB's dialect) rendered for Spark and planned in
    ``spark`` with its named parameters ``args``; lazy, as every Spark frame."""
    return spark.sql(render(statement, Engine.SPARK), args=args)


@functools.cache
def over_tables(statement: str, tables: tuple[str, ...]) -> str:
    """A shared statement whose ``{table}`` placeholders name ``tables`` (the unit's ``sql``
    fills them in), rendered for Spark with the placeholders kept: SQLGlot parses each as a
    plain table name, then the name becomes the placeholder again."""
    stand_in = {table: f"__table_{table}__" for table in tables}
    rendered = render(statement.format(**stand_in), Engine.SPARK)
    for table, name in stand_in.items():
        rendered = rendered.replace(name, "{" + table + "}")
    return rendered
