"""Pruning one load date behind the replay horizon on Delta: the shared procedure
(``retention/written_once.py``, whose docstring says what goes and what stays); each delete a
``MERGE ... DELETE`` (Sail 0.7 refuses ``DELETE`` with a subquery)."""

from __future__ import annotations

import datetime as dt
from functools import partial

from replay_assets.storage.capabilities import shared
from replay_assets.storage.retention import written_once
from replay_assets.storage.spark.unit import On


class RetentionReading(On, shared.RetentionReads):
    pass


class RetentionWriting(RetentionReading):
    def prune_load_date(self, day: str, *, operation_id: str, keep: int, now: dt.datetime) -> dict[str, int]:
        """Prune ``day``; returns the rows removed per kind, also recorded in ``pruned_load_dates``."""
        drop = partial(written_once.drop_date, self.sql)
        return written_once.prune_load_date(
            self.sql, day, operation_id=operation_id, keep=keep, now=now, drop=drop
        )
