"""A deterministic CDC stream at production volume, its deliveries and its reference fold.

The stream: order-line inserts, 10 % moves to another store or business date, 5 %
deletes, 5 % stale replays (an older version of a moved line, re-sent under a new event id),
1 % customer upserts, then 10 % of the stream again as exact duplicate deliveries; fully
shuffled and spread over the load dates. Every (key, version) has one image, so nothing blocks,
and each key's winner is its highest version: the bare reference fold is a ``QUALIFY``.

Everything is vectorised (polars), seeded, and written as JSONL deliveries with manifests in
the landing area, plus one Parquet copy of the events for the reference fold.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

U64 = pl.UInt64
SOURCE = "erp"
STORES = 50
BUSINESS_DAYS = 60
LINES_PER_ORDER = 2
MAX_BATCH_EVENTS = 1_000_000


def mix(column: pl.Expr, salt: int) -> pl.Expr:
    """splitmix64 of ``column + salt``: a seeded, platform-independent pseudo-random u64."""
    x = column.cast(U64) + pl.lit((salt * 0x9E3779B97F4A7C15) % 2**64, dtype=U64)
    x = (x.xor(x // pl.lit(2**30, dtype=U64))) * pl.lit(0xBF58476D1CE4E5B9, dtype=U64)
    x = (x.xor(x // pl.lit(2**27, dtype=U64))) * pl.lit(0x94D049BB133111EB, dtype=U64)
    return x.xor(x // pl.lit(2**31, dtype=U64))


def pick(column: pl.Expr, salt: int, n: int) -> pl.Expr:
    return (mix(column, salt) % pl.lit(n, dtype=U64)).cast(pl.Int64)


@dataclass(frozen=True)
class Shape:
    """How many events of each kind a stream of ``events`` has."""

    events: int

    @property
    def duplicates(self) -> int:
        return self.events // 10

    @property
    def moves(self) -> int:
        return self.events // 10

    @property
    def deletes(self) -> int:
        return self.events // 20

    @property
    def stale(self) -> int:
        return min(self.events // 20, self.moves)

    @property
    def customers(self) -> int:
        return max(self.events // 100, 1)

    @property
    def inserts(self) -> int:
        rest = self.events - self.duplicates - self.moves - self.deletes - self.stale - self.customers
        return max(rest, self.moves, self.deletes, 1)


def business_date(days_back: pl.Expr, last: dt.date) -> pl.Expr:
    return (pl.lit(last) - pl.duration(days=days_back)).cast(pl.String)


def order_events(
    shape: Shape, seed: int, last_business: dt.date, base: int, key_base: int | None = None
) -> pl.DataFrame:
    """Unique order-line events (no duplicates yet) with their versions and images; source_seqs
    start at ``base``, keys at ``key_base`` (default ``base``: a later day of a growing run brings
    new orders; ``0`` changes the same orders again, a steady state of bounded size)."""
    first_key = base if key_base is None else key_base
    k = pl.int_range(first_key, first_key + shape.inserts, dtype=pl.Int64)
    inserts = pl.select(k.alias("k")).with_columns(
        (pl.col("k") - first_key + base).alias("seq"),
        pick(pl.col("k"), seed + 1, STORES).alias("store"),
        pick(pl.col("k"), seed + 2, BUSINESS_DAYS).alias("back"),
        (pick(pl.col("k"), seed + 3, 9) + 1).alias("quantity"),
        (pick(pl.col("k"), seed + 4, 100_000) + 100).alias("amount"),
        pl.lit("upsert").alias("op"),
    )
    moved = inserts.sample(shape.moves, seed=seed + 5).sort("k")
    moves = moved.with_columns(
        (pl.int_range(0, pl.len(), dtype=pl.Int64) + base + shape.inserts).alias("seq"),
        pl.when(pick(pl.col("k"), seed + 6, 2) == 0)
        .then((pl.col("store") + 1 + pick(pl.col("k"), seed + 7, STORES - 1)) % STORES)
        .otherwise(pl.col("store"))
        .alias("store"),
        pl.when(pick(pl.col("k"), seed + 6, 2) == 1)
        .then((pl.col("back") + 1 + pick(pl.col("k"), seed + 8, BUSINESS_DAYS - 1)) % BUSINESS_DAYS)
        .otherwise(pl.col("back"))
        .alias("back"),
    )
    deletes = (
        inserts.sample(shape.deletes, seed=seed + 9)
        .sort("k")
        .with_columns(
            (pl.int_range(0, pl.len(), dtype=pl.Int64) + base + shape.inserts + shape.moves).alias("seq"),
            pl.lit("delete").alias("op"),
        )
    )
    first_seq = base + shape.inserts + shape.moves + shape.deletes
    stale = (
        inserts.join(moved.select("k").sample(shape.stale, seed=seed + 10), on="k")
        .sort("k")
        .with_columns(
            pl.col("seq").alias("version"),
            (pl.int_range(0, pl.len(), dtype=pl.Int64) + first_seq).alias("seq"),
        )
    )
    frames = [f.with_columns(pl.col("seq").alias("version")) for f in (inserts, moves, deletes)]
    return pl.concat([*frames, stale], how="diagonal_relaxed").with_columns(
        text("O", pl.col("k") // LINES_PER_ORDER).alias("order_id"),
        (pl.col("k") % LINES_PER_ORDER + 1).alias("line_no"),
        text("S", pl.col("store")).alias("store_id"),
        text("C", pl.col("k") % 100_000).alias("customer_id"),
        text("P", pl.col("k") % 5_000).alias("product_id"),
        business_date(pl.col("back"), last_business).alias("business_date"),
        (pl.col("amount") * 6 // 10).alias("cost"),
        pl.lit("order_line").alias("entity"),
    )


def text(*parts: str | pl.Expr) -> pl.Expr:
    """Concatenate literal text (``str``) and columns (``pl.Expr``) into one string column."""
    return pl.concat_str([p.cast(pl.String) if isinstance(p, pl.Expr) else pl.lit(p) for p in parts])


def order_line_json(frame: pl.DataFrame, event_time: str) -> pl.Expr:
    c = pl.col
    head = text(
        '{"event_id":"E', c("seq"), '","source_seq":', c("seq"),
        ',"schema_version":1,"entity":"order_line","op":"', c("op"),
        '","key":{"order_id":"', c("order_id"), '","line_no":', c("line_no"),
        '},"version":', c("version"), ',"event_time":"', event_time, '","after":',
    )  # fmt: skip
    after = text(
        '{"order_id":"', c("order_id"), '","line_no":', c("line_no"),
        ',"store_id":"', c("store_id"), '","customer_id":"', c("customer_id"),
        '","product_id":"', c("product_id"), '","business_date":"', c("business_date"),
        '","quantity":', c("quantity"), ',"amount_minor":', c("amount"),
        ',"cost_minor":', c("cost"), ',"status":"active"}}',
    )  # fmt: skip
    return pl.concat_str(head, pl.when(c("op") == "delete").then(pl.lit("null}")).otherwise(after))


def customer_events(shape: Shape, seed: int, first_seq: int, event_time: str) -> pl.DataFrame:
    c = pl.col
    frame = pl.select(pl.int_range(0, shape.customers, dtype=pl.Int64).alias("c")).with_columns(
        (c("c") + first_seq).alias("seq"),
        text("C", c("c")).alias("customer_id"),
        text("name-", pick(c("c"), seed + 11, 1000)).alias("name"),
        text("seg-", pick(c("c"), seed + 12, 5)).alias("segment"),
        pl.lit("customer").alias("entity"),
        pl.lit("upsert").alias("op"),
    )
    line = text(
        '{"event_id":"E', c("seq"), '","source_seq":', c("seq"),
        ',"schema_version":1,"entity":"customer","op":"upsert","key":{"customer_id":"',
        c("customer_id"), '"},"version":', c("seq"), ',"event_time":"', event_time,
        '","after":{"customer_id":"', c("customer_id"), '","name":"', c("name"),
        '","segment":"', c("segment"), '"}}',
    )  # fmt: skip
    return frame.with_columns(c("seq").alias("version"), line.alias("line"))


REFERENCE_COLUMNS = [
    "entity",
    "op",
    "seq",
    "version",
    "order_id",
    "line_no",
    "store_id",
    "customer_id",
    "product_id",
    "business_date",
    "quantity",
    "amount",
    "cost",
    "name",
    "segment",
    "line",
]


def max_seq(frame: pl.DataFrame) -> int:
    value = frame.select(pl.col("seq").max()).item()
    return int(value) if value is not None else -1


def stream(
    events: int,
    seed: int,
    last_business: dt.date,
    event_time: str,
    base: int = 0,
    key_base: int | None = None,
) -> pl.DataFrame:
    """The whole unique stream plus exact duplicate copies, shuffled; one row per delivered line.
    Source_seqs start at ``base`` (the next free base is ``max(seq) + 1``), keys at ``key_base``
    (default ``base``)."""
    shape = Shape(events)
    orders = order_events(shape, seed, last_business, base, key_base)
    orders = orders.with_columns(order_line_json(orders, event_time).alias("line"))
    first_customer_seq = max_seq(orders) + 1
    customers = customer_events(shape, seed, first_customer_seq, event_time)
    order_columns = [c for c in REFERENCE_COLUMNS if c in orders.columns]
    unique = pl.concat([orders.select(order_columns), customers], how="diagonal_relaxed")
    unique = unique.select(REFERENCE_COLUMNS)
    copies = unique.sample(min(shape.duplicates, unique.height), seed=seed + 13)
    return pl.concat([unique, copies]).sample(fraction=1.0, shuffle=True, seed=seed + 14)


def write_file(path: Path, lines: pl.Series) -> tuple[str, int]:
    """Write lines (newline-terminated), fsync; returns (sha256, bytes)."""
    digest, size = hashlib.sha256(), 0
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        for start in range(0, lines.len(), 200_000):
            chunk = ("\n".join(lines.slice(start, 200_000).to_list()) + "\n").encode("utf-8")
            digest.update(chunk)
            size += len(chunk)
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return digest.hexdigest(), size


def deliver(landing: Path, load_date: str, tag: str, frame: pl.DataFrame, batches: int) -> list[str]:
    """Split a day's lines into batches (files + manifests, manifest last); returns batch ids."""
    folder = landing / SOURCE / load_date
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    size = -(-frame.height // batches) if frame.height else 0
    for b in range(batches):
        batch_id = f"B{load_date.replace('-', '')}-{tag}-{b:03d}"
        part = frame.slice(b * size, size) if size else frame.clear()
        files = []
        if part.height:
            sha, nbytes = write_file(folder / f"{batch_id}.jsonl", part["line"])
            files.append({"path": f"{batch_id}.jsonl", "sha256": sha, "events": part.height, "bytes": nbytes})
        manifest = {
            "source": SOURCE,
            "batch_id": batch_id,
            "load_date": load_date,
            "ready_at": f"{load_date}T{1 + b % 20:02d}:00:00Z",
            "schema_version": 1,
            "files": files,
        }
        tmp = folder / f".{batch_id}.manifest.json.tmp"
        tmp.write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")))
        os.replace(tmp, folder / f"{batch_id}.manifest.json")
        ids.append(batch_id)
    return ids


def keep_for_reference(frame: pl.DataFrame, load_date: str, path: Path) -> None:
    """The same events as Parquet (no JSON, no validation): what the bare reference folds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.drop("line").with_columns(pl.lit(load_date).alias("load_date")).write_parquet(path)


REFERENCE_ORDERS = """
    SELECT order_id, line_no,
           CASE WHEN op = 'upsert' THEN store_id END AS store_id,
           CASE WHEN op = 'upsert' THEN customer_id END AS customer_id,
           CASE WHEN op = 'upsert' THEN product_id END AS product_id,
           CASE WHEN op = 'upsert' THEN CAST(business_date AS DATE) END AS business_date,
           CASE WHEN op = 'upsert' THEN quantity END AS quantity,
           CASE WHEN op = 'upsert' THEN amount END AS amount_minor,
           CASE WHEN op = 'upsert' THEN cost END AS cost_minor,
           CASE WHEN op = 'upsert' THEN 'active' ELSE 'deleted' END AS status,
           version, seq AS source_seq, CAST(load_date AS DATE) AS load_date
    FROM read_parquet(?) WHERE entity = 'order_line'
    QUALIFY row_number() OVER (PARTITION BY order_id, line_no ORDER BY version DESC, load_date) = 1"""
REFERENCE_CUSTOMERS = """
    SELECT customer_id, name, segment, 'active' AS status, version, seq AS source_seq,
           CAST(load_date AS DATE) AS load_date
    FROM read_parquet(?) WHERE entity = 'customer'
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY version DESC, load_date) = 1"""
REFERENCE_AGGREGATES = """
    SELECT store_id, business_date, count(DISTINCT order_id) AS order_count, count(*) AS line_count,
           sum(quantity) AS units, sum(amount_minor) AS amount_minor, sum(cost_minor) AS cost_minor,
           sum(amount_minor) - sum(cost_minor) AS gross_profit_minor
    FROM ref_orders WHERE status = 'active' GROUP BY ALL"""


def reference_fold(con: duckdb.DuckDBPyConnection, parquet: list[str]) -> None:
    """The bare set-based fold (dedupe, version fence, tombstones, aggregates) into tables
    ``ref_orders``, ``ref_customers``, ``ref_aggregates`` of ``con``."""
    con.execute(f"CREATE OR REPLACE TABLE ref_orders AS {REFERENCE_ORDERS}", [parquet])
    con.execute(f"CREATE OR REPLACE TABLE ref_customers AS {REFERENCE_CUSTOMERS}", [parquet])
    con.execute(f"CREATE OR REPLACE TABLE ref_aggregates AS {REFERENCE_AGGREGATES}")


# The peers' benchmark reads the delivered JSONL itself: one typed read_json of every file (the
# load date from the file's folder), then the same fold. No validation, hashing or evidence.
_KEY = "STRUCT(order_id VARCHAR, line_no BIGINT, customer_id VARCHAR)"
_AFTER = (
    "STRUCT(order_id VARCHAR, line_no BIGINT, store_id VARCHAR, customer_id VARCHAR, product_id VARCHAR, "
    "business_date VARCHAR, quantity BIGINT, amount_minor BIGINT, cost_minor BIGINT, status VARCHAR, "
    "name VARCHAR, segment VARCHAR)"
)
JSONL_EVENTS = f"""
    SELECT entity, op, source_seq AS seq, version, key.order_id AS order_id,
           key.line_no AS line_no, after.store_id AS store_id,
           coalesce(after.customer_id, key.customer_id) AS customer_id, after.product_id AS product_id,
           after.business_date AS business_date, after.quantity AS quantity, after.amount_minor AS amount,
           after.cost_minor AS cost, after.name AS name, after.segment AS segment,
           regexp_extract(filename, '/([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})/[^/]*$', 1) AS load_date
    FROM read_json(?, format = 'newline_delimited', filename = true, columns = {{
        'event_id': 'VARCHAR', 'source_seq': 'BIGINT', 'schema_version': 'BIGINT', 'entity': 'VARCHAR',
        'op': 'VARCHAR', 'key': '{_KEY}', 'version': 'BIGINT', 'event_time': 'VARCHAR',
        'after': '{_AFTER}'}})"""


def reference_fold_jsonl(con: duckdb.DuckDBPyConnection, jsonl: list[str]) -> None:
    """:func:`reference_fold` straight from the delivered JSONL files."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE ref_events AS {JSONL_EVENTS}", [jsonl])
    from_events = "FROM ref_events"
    orders = REFERENCE_ORDERS.replace("FROM read_parquet(?)", from_events)
    customers = REFERENCE_CUSTOMERS.replace("FROM read_parquet(?)", from_events)
    con.execute(f"CREATE OR REPLACE TABLE ref_orders AS {orders}")
    con.execute(f"CREATE OR REPLACE TABLE ref_customers AS {customers}")
    con.execute(f"CREATE OR REPLACE TABLE ref_aggregates AS {REFERENCE_AGGREGATES}")
    con.execute("DROP TABLE ref_events")
