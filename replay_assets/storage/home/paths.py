"""How a path reaches a program that reads it as more than a path: DuckDB's and polars' file
readers take a path as a glob pattern, SQLAlchemy parses a SQLite path as part of a URL. Each such
path goes through one function here, so a home whose name holds ``*[]{}'"``, spaces or unicode
reads its own files only (hostile input: two homes side by side never see each other's
rows). DuckDB cannot open a database under a path with a backslash or a ``?`` at all, so the
settings refuse such a home (``core/config.py``).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Sequence

import polars as pl

# DuckDB's glob has no backslash escape; a bracket class of one character matches that character
_GLOB_ESCAPES = str.maketrans({c: f"[{c}]" for c in "[]*?"})
# the same rule in SQL, for a folder a view computes when a query binds it (RE2 syntax)
_GLOB_ESCAPES_SQL = r"'([\[\]*?])', '[\1]', 'g'"


def glob_literal(path: str | os.PathLike[str]) -> str:
    """``path`` as a DuckDB file pattern that matches that one path and nothing else."""
    return os.fspath(path).translate(_GLOB_ESCAPES)


def glob_literal_sql(expression: str) -> str:
    """SQL of the VARCHAR ``expression`` escaped as :func:`glob_literal` escapes a path: the
    folder part of a pattern whose own wildcards follow it."""
    return f"regexp_replace({expression}, {_GLOB_ESCAPES_SQL})"


def read_parquet_files(paths: Sequence[str]) -> pl.DataFrame:
    """The Parquet files at ``paths``, each read as a name: polars, too, expands a path holding
    ``*?[]`` as a pattern unless told not to."""
    return pl.read_parquet(list(paths), glob=False)


def sqlite_url(folder: str | os.PathLike[str], name: str) -> str:
    """SQLAlchemy's URL of the SQLite database ``<folder>/<name>.db``, percent-encoded:
    SQLAlchemy reads ``?`` as the start of the URL's query and ``#`` and ``%`` as URL syntax,
    and decodes the path it parses."""
    path = os.path.join(os.path.abspath(folder), f"{name}.db")
    return "sqlite:///" + urllib.parse.quote(path)
