"""What DuckDB holds of a load date's landed files: the shared statement (``rules/landing.py``)
over the landing views' rows of the date's registered files, each view named by its files."""

from __future__ import annotations

import re

import duckdb

from replay_assets.core.receipts import LandedCounts
from replay_assets.storage.db import segments
from replay_assets.storage.db.warehouse import one
from replay_assets.storage.rules.landing import LANDED_COUNTS_SQL, TABLES, counts_of, parameters


def landed_counts(con: duckdb.DuckDBPyConnection, load_date: str) -> LandedCounts:
    """The date's files as this connection sees them (a writer's own rows, or the last commit)."""
    params = parameters(load_date)
    batches = con.execute("SELECT batch_id FROM manifests WHERE load_date = $day", {"day": load_date})
    params["batches"] = [str(r[0]) for r in batches.fetchall()]
    tables = {name: _relation(con, name, params) if name in segments.BY_VIEW else name for name in TABLES}
    found = con.execute(LANDED_COUNTS_SQL.format(**tables), params).fetchall()
    columns = ("batch_id", "source_file", "declared", "receipts", "staged", "rejected", "refused")
    pruned = one(con, "SELECT 1 FROM pruned_load_dates WHERE load_date = ?", [load_date]) is not None
    return counts_of(load_date, (dict(zip(columns, row, strict=True)) for row in found), pruned=pruned)


def _relation(con: duckdb.DuckDBPyConnection, view: str, params: dict[str, object]) -> str:
    """``segments.of_date`` of one landing view, its own parameters renamed after the view: the
    statement reads both views, and each names its files in parameters of the same names."""
    own: dict[str, object] = {"day": params["day"], "batches": params["batches"]}
    sql = segments.of_date(con, view, own)
    added = sorted(set(own) - {"day", "batches"})
    params.update({f"{view}_{name}": own[name] for name in added})
    return re.sub(r"\$(" + "|".join(map(re.escape, added)) + r")\b", rf"${view}_\1", sql)
