"""A Spark reader's unit has no write method to call (its capabilities are built from the reading
classes only, as the DuckDB adapter's are), and a writer's unit has every read and write."""

from pathlib import Path

from pyspark.sql import SparkSession

from replay_assets.storage.spark.store import SparkStore
from replay_assets_tests.storage.test_reader_ports import check_reader_and_writer_units


def test_a_spark_readers_unit_has_no_write_and_a_writers_unit_has_every_read(
    spark: SparkSession, tmp_path: Path
) -> None:
    check_reader_and_writer_units(SparkStore(spark, str(tmp_path / "warehouse")))
