"""The tiers of landing inside the engine: what a batch's delivery files become, as the rows of
``landing_task.OUT``, with no line passing through the client.

One ``mapInArrow`` task per file reads it (``landing_task.read_files``: each non-blank line's
number, text and raw-bytes sha256, and the manifest's checks), kept in a scratch table; the
canonical-line rule (``rules/canonical_lines.py``, Spark SQL) certifies the lines in the
contract's renderings; only the rest go to the oracle, in a second ``mapInArrow``
(``landing_task.decide_lines``). A certified line's receipt keeps how it was written instead of
its text, as the DuckDB adapter's receipts do; both engines' tiers are proven equal to the oracle.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type

from replay_assets.core.events import ValidationContext
from replay_assets.storage.landing.area import DeliveryFile
from replay_assets.storage.rules import canonical_lines
from replay_assets.storage.rules.render import Engine, render
from replay_assets.storage.spark import landing_task
from replay_assets.storage.spark.unit import UnitBase

_VIEW = "_landing_lines"
_OUT = from_arrow_schema(landing_task.OUT)


def landed(unit: UnitBase, files: Sequence[DeliveryFile], ctx: ValidationContext) -> DataFrame:
    """The rows of ``landing_task.OUT`` the batch's files give: receipts, staged events,
    rejections, violations and each file's figures (lazy: the caller keeps them)."""
    named = [
        {
            "path": unit.tables.landed_file(f.path),
            "name": f.name,
            "sha256": f.declared.sha256,
            "events": f.declared.events,
            "bytes": f.declared.bytes,
        }
        for f in files
    ]
    listed = unit.spark.createDataFrame(  # the schema passed along: Spark infers none from no row
        pa.Table.from_pylist(named, schema=landing_task.IN), schema=from_arrow_schema(landing_task.IN)
    )
    read = listed.repartition(max(1, len(named))).mapInArrow(partial(landing_task.read_files, ctx), _OUT)
    read = unit.kept(read)
    lines = read.where(F.col("kind") == "line")
    candidates = lines.where(F.col("reason_code").isNull()).select(
        "source_file", "line_number", F.col("payload").alias("line")
    )
    candidates.createOrReplaceTempView(_VIEW)
    text = re.sub(r"\b_lines\b", _VIEW, render(canonical_lines.CANONICAL_LINES_SQL, Engine.SPARK))
    certified = unit.kept(unit.spark.sql(text, args=canonical_lines.parameters(ctx)))
    at = ["source_file", "line_number"]
    rest = lines.join(certified.select(*at), on=at, how="left_anti")
    decided = rest.mapInArrow(partial(landing_task.decide_lines, ctx), _OUT)
    receipts = lines.drop("rendering").join(certified.select(*at, "rendering"), on=at, how="left")
    receipts = receipts.withColumn("kind", F.lit("receipt")).withColumn(
        "payload", F.when(F.col("rendering").isNull(), F.col("payload"))
    )
    staged = certified.withColumn("kind", F.lit("staged"))
    parts = [receipts, staged, decided, read.where(F.col("kind") == "file")]
    out = _out(parts[0])
    for part in parts[1:]:
        out = out.unionByName(_out(part))
    return out


def _out(frame: DataFrame) -> DataFrame:
    """``frame`` as ``OUT``'s columns, by name and type; a missing one null."""
    columns: list[Column] = []
    for field in landing_task.OUT:
        value = F.col(field.name) if field.name in frame.columns else F.lit(None)
        columns.append(value.cast(from_arrow_type(field.type)).alias(field.name))
    return frame.select(*columns)
