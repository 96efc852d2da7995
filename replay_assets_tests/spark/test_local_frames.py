"""Frames of this process sent to the engine (``frames.local_frame``): a small one inside the
plan, a large one in slices through a scratch Delta table (gRPC refuses a plan over 128 MiB), the
same rows either way; the unit removes its scratch tables when it ends."""

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from replay_assets.storage.spark import frames
from replay_assets.storage.spark.store import SparkStore


def test_a_large_frame_goes_in_slices_and_its_scratch_table_goes_with_the_unit(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = pa.table({"k": list(range(5000)), "v": [f"value {n}" for n in range(5000)]})
    monkeypatch.setattr(frames, "LOCAL_BYTES", table.nbytes // 7)  # eight slices
    store = SparkStore(spark, str(tmp_path / "warehouse"))
    with store.read() as unit:
        sent = unit.ops.local(table)
        assert sorted(tuple(r.values()) for r in unit.ops.rows(sent)) == sorted(
            zip(*table.to_pydict().values(), strict=True)
        )
        [scratch] = unit.ops.scratch
        log = Path(scratch) / "_delta_log"
        assert len([f for f in log.iterdir() if f.suffix == ".json"]) == 8  # one append per slice
        small = unit.ops.local(table.slice(0, 10))
        assert unit.ops.rows(small) == table.slice(0, 10).to_pylist() and len(unit.ops.scratch) == 1
    assert not Path(scratch).exists()
