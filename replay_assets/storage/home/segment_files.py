"""The workers' Parquet files of the landing's rows (``landing/prepare.py`` writes them): their
columns and the durable write. Engine-neutral: DuckDB registers the files under the home and
reads them through views (``db/segments.py``); Spark's landing task builds the same rows."""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

# the columns of a staged event row (``landing/rows.py`` builds them)
STAGED_SCHEMA = pl.Schema(
    {
        "batch_id": pl.String,
        "source": pl.String,
        "load_date": pl.String,
        "source_file": pl.String,
        "line_number": pl.Int64,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "entity": pl.String,
        "op": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "event_time": pl.String,
        "content_sha256": pl.String,
        "image_sha256": pl.String,
        "order_id": pl.String,
        "line_no": pl.Int64,
        "store_id": pl.String,
        "customer_id": pl.String,
        "product_id": pl.String,
        "business_date": pl.String,
        "quantity": pl.Int64,
        "amount_minor": pl.Int64,
        "cost_minor": pl.Int64,
        "status": pl.String,
        "name": pl.String,
        "segment": pl.String,
    }
)

ZSTD_LEVEL = 1  # the default level 3 costs more CPU for files no smaller

# a file's constant columns, in its register row (``_WHERE`` of ``ingest.py``)
FILE_COLUMNS = ("batch_id", "source", "load_date", "source_file")
STAGED_FILE_SCHEMA = pl.Schema({c: t for c, t in STAGED_SCHEMA.items() if c not in FILE_COLUMNS})
LINES_FILE_SCHEMA = pl.Schema(
    {"line_number": pl.Int64, "sha256": pl.String, "line": pl.String, "rendering": pl.Int8}
)


@dataclass(frozen=True)
class Written:
    """A Parquet file a worker wrote: its rows, bytes and the sha256 of its bytes."""

    path: str
    rows: int
    bytes: int
    sha256: str


def write(frame: pl.DataFrame, path: Path, schema: pl.Schema) -> Written:
    """Write ``frame`` as ``zstd`` Parquet of ``schema`` and make its bytes durable (fsync): a
    file registered by a commit must survive a power cut as the commit does."""
    buffer = io.BytesIO()
    frame.select(list(schema)).cast(schema).write_parquet(
        buffer, compression="zstd", compression_level=ZSTD_LEVEL, statistics=False
    )
    data = buffer.getbuffer()
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return Written(str(path), frame.height, len(data), hashlib.sha256(data).hexdigest())
