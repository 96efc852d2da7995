"""The fold of one load date in DuckDB, the only production fold: the contract of
:mod:`core.fold` (rules in its docstring), set-based over tables, so a load date of any size is
folded within the warehouse's memory limit (DuckDB spills) instead of in Python values. The core's
sequential ``fold_reference`` is the oracle; a property test proves this SQL equals it,
conflicts included.

Reads the relations ``_events`` (``pos`` and the fold's event columns), ``_committed`` (each
touched key's state before the load date) and ``_registry`` (registry rows sharing an event id or
a source_seq with the load date), and creates the temporary table ``_fold``:
``pos, outcome, rule, winner, new_id``.
"""

from __future__ import annotations

import duckdb

from replay_assets.storage.rules.fold import FOLD_PARAMS, FOLD_SQL


def fold_into(con: duckdb.DuckDBPyConnection, statement: str = FOLD_SQL) -> None:
    """Fold ``_events`` onto ``_committed`` and ``_registry`` into the temporary table ``_fold``."""
    con.execute("CREATE OR REPLACE TEMP TABLE _fold AS " + statement, FOLD_PARAMS)
