"""The grammar's certification, set-based: the fast path of :func:`core.events.parse_event` that
each landing worker runs over its slice of lines (``prepare.py``).

A line is certified only when it matches, whole, one of the grammars of ``core/line_grammar.py``
(the contract's two compact renderings, every field's value set): polars' regex engine, one
pass per grammar over the lines the ones before left. What a grammar cannot say is checked
after, set-based in DuckDB: calendar validity of the event time's date, the business date in
the window, the key equal to the image's key, ``source_seq`` inside the declared slice, an
upsert with an image and a delete without. The grammar proved the shape, so DuckDB's
``from_json`` only extracts the values, and the canonical key, image and content texts come
from the same SQL as DuckDB's JSON path (``validation.events_sql``). Their sha256 are taken by
``polars-hash``, the cheapest of it, ``hashlib`` and DuckDB's ``sha256`` (docs/facts.md).

Every other line (suspect, malformed, rejected, blocking, upcast, another layout) is not
certified and goes to the slower tiers, so reasons, details and line numbers stay the
oracle's. ``test_certify.py`` proves both agree.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence

import duckdb
import polars as pl

from replay_assets.core.events import TOMBSTONE_IMAGE_SHA, ValidationContext
from replay_assets.core.line_grammar import AFTER, SORTED, STAGED_COLUMNS, WITH_VERSION
from replay_assets.storage.landing.grammar import matches, sha256_hex
from replay_assets.storage.landing.validation import T1_IMAGE, T1_KEY, T1_STRUCT
from replay_assets.storage.rules.staged_events import events_sql

_SQL = f"""
WITH parsed AS MATERIALIZED (
    SELECT line_number, entity, sorted, from_json(line, '{T1_STRUCT}') AS e,
        CASE WHEN contains(line, '"after":{{') THEN 2 WHEN contains(line, '"after":null') THEN 1
             ELSE 0 END AS form
    FROM _matched
), typed AS (
    SELECT line_number, entity, e.event_id AS event_id, e.source_seq AS source_seq, e.op AS op,
        coalesce(e.version, e.source_seq) AS version, e.event_time AS event_time,
        {", ".join(f"e.key.{n} AS k_{n}" for n in T1_KEY)},
        {", ".join(f"e.after.{n} AS a_{n}" for n in T1_IMAGE)},
        sorted * {SORTED} + (e.version IS NOT NULL)::INTEGER * {WITH_VERSION} + form * {AFTER} AS rendering
    FROM parsed
), checked AS (
    SELECT * FROM typed
    WHERE TRY_CAST(left(event_time, 10) AS DATE) IS NOT NULL
        AND (op = 'upsert') = (rendering // {AFTER} = 2)
        AND ($seq_low IS NULL OR source_seq >= $seq_low)
        AND ($seq_high IS NULL OR source_seq <= $seq_high)
        AND CASE WHEN op = 'delete' THEN true
                 WHEN entity = 'order_line' THEN a_order_id = k_order_id AND a_line_no = k_line_no
                    AND TRY_CAST(a_business_date AS DATE) BETWEEN $start AND $end
                 ELSE a_customer_id = k_customer_id END
)
SELECT * FROM ({events_sql("checked", hashed=False, carry=("rendering",))})"""


_DUCKDB: list[duckdb.DuckDBPyConnection] = []
_LOCK = threading.Lock()


def _cursor() -> duckdb.DuckDBPyConnection:
    """A cursor on this process's in-memory database (one instance, since starting one is not
    free; a cursor is a connection of its own, so threads do not share one)."""
    with _LOCK:
        if not _DUCKDB:
            _DUCKDB.append(duckdb.connect(config={"threads": 1}))
        return _DUCKDB[0].cursor()


def certify(ctx: ValidationContext, lines: Sequence[str], skip: Collection[int] = ()) -> pl.DataFrame:
    """The staged events of the lines certified, in ``STAGED_COLUMNS`` order (``line_index``:
    the line's index in ``lines``; ints as Int64; ``rendering``: how the line was written).
    Lines whose index is in ``skip`` are never certified."""
    return hashed(extract(ctx, matches(lines, skip)))


def extract(ctx: ValidationContext, matched: pl.DataFrame) -> pl.DataFrame:
    """The matched lines that pass the checks a grammar cannot say, as staged events with their
    canonical content and image texts (``content_json``, ``image_json``), in line order."""
    cursor = _cursor()
    try:
        cursor.register("_matched", matched)
        params = {
            "seq_low": ctx.seq_low,
            "seq_high": ctx.seq_high,
            "start": ctx.business_date_start,
            "end": ctx.business_date_end,
        }
        events: pl.DataFrame = cursor.sql(_SQL, params=params).pl()
    finally:
        cursor.close()
    # in line order, which DuckDB keeps here (one thread, insertion order preserved): the sort
    # is a guard that costs a check
    return events if events["line_number"].is_sorted() else events.sort("line_number")


def hashed(events: pl.DataFrame) -> pl.DataFrame:
    """The staged events of :func:`extract`'s rows: the texts replaced by their sha256."""
    return events.with_columns(
        pl.col("line_number").cast(pl.Int64).alias("line_index"),
        sha256_hex("content_json").alias("content_sha256"),
        sha256_hex("image_json").fill_null(TOMBSTONE_IMAGE_SHA).alias("image_sha256"),
        pl.col("rendering").cast(pl.Int8),
    ).select(STAGED_COLUMNS)
