"""Publishing daily aggregates on Delta: the Spark adapter's steps (``storage/publish/steps.py``)
of the one procedure (``publish/procedure.py``). The candidates and the gate's recomputation are
the shared statements (``rules/aggregates.py``) rendered for Spark over the state as of the
certified pointer (the latest tables when they hold it): no order line comes to the client."""

from __future__ import annotations

import polars as pl

from replay_assets.storage.capabilities import shared
from replay_assets.storage.rules import by_change
from replay_assets.storage.rules.aggregates import SQL_AGGREGATES_BY_ORDER
from replay_assets.storage.spark.unit import On, SparkSql, UnitBase


class SparkCandidateSteps(On, shared.CandidateReads):
    def recomputed_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame:
        """The gate's recomputation (``SQL_AGGREGATES_BY_ORDER``) over the latest tables, or else
        over each key's newest history row up to ``as_of`` (``by_change.as_of``)."""
        newest = by_change.as_of("order_history", ("order_id", "line_no"), "load_date <= $as_of")
        state = "order_latest" if from_latest else f"({newest}) s"
        args: dict[str, object] = {"dates": dates} if from_latest else {"dates": dates, "as_of": as_of}
        return self.sql.frame(SQL_AGGREGATES_BY_ORDER.format(state=state), **args)


class SparkPublishSteps:
    def __init__(self, u: UnitBase) -> None:
        self.candidates = SparkCandidateSteps(u)
        self.publications = shared.PublicationWrites(SparkSql(u))
