"""DuckDB's statements for Spark. Statements shared by both adapters are written in the SQL both
engines parse (``min_by``, ``array_contains``, ``STRING``, named ``GROUP BY`` columns; Sail 0.7
resolves neither ``GROUP BY ALL`` nor ``QUALIFY``), so what is left to render is syntax only."""

from __future__ import annotations

import re
from collections.abc import Iterable


def render(statement: str, parameters: Iterable[str]) -> str:
    """``statement`` for Spark: no ``MATERIALIZED`` hints (Spark plans common expressions itself)
    and its named ``parameters`` marked ``:name``, not ``$name``. Only those names are rewritten,
    so a ``$`` elsewhere (a regular expression's ``$1``, a literal) is left as it is."""
    names = sorted(parameters, key=len, reverse=True)
    if not names:
        return statement.replace(" AS MATERIALIZED (", " AS (")
    marker = re.compile(r"\$(" + "|".join(map(re.escape, names)) + r")\b")
    return marker.sub(r":\1", statement.replace(" AS MATERIALIZED (", " AS ("))
