"""Landing an adapter's source records (``land --adapter debezium``): each record as delivered,
the native line it became or why none, and the evidence the native event cannot carry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from replay_assets.core import strict_json
from replay_assets.core.events import canonical_json
from replay_assets.core.manifest import Manifest
from replay_assets.storage.landing.area import DeliveryFile, DeliveryMismatch

SOURCE_RECORDS_SCHEMA = pl.Schema(
    {
        "batch_id": pl.String,
        "load_date": pl.String,
        "records_file": pl.String,
        "record_number": pl.Int64,
        "source_file": pl.String,
        "line_number": pl.Int64,
        "adapter": pl.String,
        "reason": pl.String,
        "evidence": pl.String,
        "envelope": pl.String,
    }
)

RECORD_LINE_FACTOR = 8  # a source record line may be this many times the event line limit
SOURCE_RECORD_FIELDS = ("record", "line", "adapter", "reason", "evidence", "envelope")


def record_rows(manifest: Manifest, records: DeliveryFile, line_bytes: int) -> Iterator[list[dict[str, Any]]]:
    """The adapter's source records (one JSON object a line: the record's number in the file it
    read, the native line it became or null, the adapter, why it could not be mapped, its
    evidence, the record as delivered), verified against the manifest like a data file, as rows
    a chunk at a time (any engine). A record holds the delivered line and more, so its lines may
    be longer than an event's."""
    data_file = manifest.files[0].path if manifest.files else None
    for first, lines, problems in records.chunks(line_bytes=line_bytes):
        rows = []
        for number, line in enumerate(lines, first):
            if not line.strip():
                continue
            try:
                obj = strict_json.loads(line) if number not in problems else None
            except ValueError:
                obj = None
            if not isinstance(obj, dict) or set(obj) != set(SOURCE_RECORD_FIELDS):
                raise DeliveryMismatch(f"file {records.name} line {number} is not a source record")
            rows.append(
                {
                    "batch_id": manifest.batch_id,
                    "load_date": manifest.load_date,
                    "records_file": records.name,
                    "record_number": obj["record"],
                    "source_file": data_file if obj["line"] is not None else None,
                    "line_number": obj["line"],
                    "adapter": obj["adapter"],
                    "reason": obj["reason"],
                    "evidence": canonical_json(obj["evidence"]),
                    "envelope": obj["envelope"],
                }
            )
        if rows:
            yield rows
