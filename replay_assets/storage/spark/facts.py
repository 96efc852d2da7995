"""What the Spark warehouse knows about load dates: the apply port's reads (written once,
``storage/apply/reading.py``)."""

from __future__ import annotations

from replay_assets.storage.apply import reading
from replay_assets.storage.journal import identities
from replay_assets.storage.rules.sql import on_sql
from replay_assets.storage.spark.unit import On


class ApplyReading(On):
    warehouse_facts = on_sql(reading.warehouse_facts)
    require_landed = on_sql(reading.require_landed)
    apply_operation = on_sql(identities.apply_operation)
    target_digest = on_sql(reading.target_digest)
