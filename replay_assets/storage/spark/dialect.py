"""Shared statements for Spark. Statements shared by both adapters are written once in DuckDB's
dialect, in SQL both engines can run (named ``GROUP BY`` columns; Sail 0.7 resolves neither
``GROUP BY ALL`` nor ``QUALIFY``), and rendered by SQLGlot (``rules/render.py``): ``shared``.
``render`` is the older rewrite of parameter markers alone, which the landing still uses."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from replay_assets.storage.rules.render import Engine
from replay_assets.storage.rules.render import render as rules_render


def render(statement: str, parameters: Iterable[str]) -> str:
    """``statement`` for Spark: no ``MATERIALIZED`` hints (Spark plans common expressions itself)
    and its named ``parameters`` marked ``:name``, not ``$name``. Only those names are rewritten,
    so a ``$`` elsewhere (a regular expression's ``$1``, a literal) is left as it is."""
    names = sorted(parameters, key=len, reverse=True)
    if not names:
        return statement.replace(" AS MATERIALIZED (", " AS (")
    marker = re.compile(r"\$(" + "|".join(map(re.escape, names)) + r")\b")
    return marker.sub(r":\1", statement.replace(" AS MATERIALIZED (", " AS ("))


def shared(spark: SparkSession, statement: str, args: dict[str, Any] | None = None) -> DataFrame:
    """A shared statement (``storage/rules``, DuckDB's dialect) rendered for Spark and planned in
    ``spark`` with its named parameters ``args``; lazy, as every Spark frame."""
    return spark.sql(rules_render(statement, Engine.SPARK), args=args)
