"""The row-level gate over the rows a load date wrote, run inside the engine: the function of one
``mapInArrow`` task (in Sail's server process, or on a Spark executor), so the rows never come to
the client; only the verdicts do, pickled. The checks are the shared ones
(``storage/apply/row_checks.check_rows``), fed each table's rows in key order, as the client
fed them before. This module imports no Spark: it is what the engine's Python imports.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence

import polars as pl
import pyarrow as pa

from replay_assets.storage.apply.row_checks import check_rows

TAG = "_table"  # which table of ``tables`` a row is of, by index
OUT = pa.schema([("verdicts", pa.binary())])


def check_written(
    tables: Sequence[tuple[Sequence[str], Sequence[str]]], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function over every written row (one task): ``tables`` gives each table's
    columns and key; yields one row, the pickled ``RowChecks``."""
    found = [f for f in (pl.DataFrame(pl.from_arrow(b)) for b in batches) if f.height]
    rows = pl.concat(found, how="vertical_relaxed") if found else None
    parts: list[list[pl.DataFrame]] = []
    for index, (columns, key) in enumerate(tables):
        written = None if rows is None else rows.filter(pl.col(TAG) == index)
        if written is None or written.is_empty():
            parts.append([])
        else:
            parts.append([written.select(list(columns)).sort(list(key))])
    verdicts = check_rows(parts[0], parts[1])
    yield pa.RecordBatch.from_pylist([{"verdicts": pickle.dumps(verdicts)}], schema=OUT)
