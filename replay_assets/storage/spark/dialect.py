"""DuckDB's statements for Spark. Statements shared by both adapters are written in the SQL both
engines parse (``min_by``, ``array_contains``, ``STRING``, named ``GROUP BY`` columns; Sail 0.7
resolves neither ``GROUP BY ALL`` nor ``QUALIFY``), so what is left to render is syntax only."""

from __future__ import annotations

import re


def render(statement: str) -> str:
    """``statement`` for Spark: no ``MATERIALIZED`` hints (Spark plans common expressions itself)
    and named parameters marked ``:name``, not ``$name``."""
    return re.sub(r"\$(\w+)", r":\1", statement.replace(" AS MATERIALIZED (", " AS ("))
