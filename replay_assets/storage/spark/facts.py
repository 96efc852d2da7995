"""What the Spark warehouse knows about load dates and publications: the apply port's reads
(written once, ``storage/apply/reading.py``) and the publications as frames other capabilities
plan on."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay_assets.storage.apply import reading
from replay_assets.storage.journal import identities
from replay_assets.storage.rules.sql import on_sql
from replay_assets.storage.spark.frames import first_of
from replay_assets.storage.spark.unit import On, UnitBase


def newest_publications(u: UnitBase, asset: str) -> DataFrame:
    """Each partition's newest publication of ``asset``."""
    found = u.frame("publications").where(F.col("asset") == F.lit(asset))
    return first_of(found, ("partition_key",), F.col("version").desc())


class ApplyReading(On):
    warehouse_facts = on_sql(reading.warehouse_facts)
    require_landed = on_sql(reading.require_landed)
    apply_operation = on_sql(identities.apply_operation)
    target_digest = on_sql(reading.target_digest)
