"""Vectorised event validation in DuckDB: the fast path of :func:`core.events.parse_event`.

The core's per-line parser is the contract (and the oracle). This module *certifies* lines in
bulk: a line is certified only when every rule of the contract holds without doubt — a JSON
object with exactly the allowed fields (no duplicate keys), integers that are JSON integers in
0..1e12, ids matching the id pattern, a strict ISO-8601 UTC ``event_time``, a calendar business
date inside the window, the key equal to the image's key fields, ``source_seq`` inside the
declared slice, no escape sequences or control characters anywhere. For those lines it computes
the same :class:`Event` values (canonical key text, canonical image and content JSON, their
sha256) set-based. Every other line — anything suspect, including every line that must be
rejected or that blocks its batch — is left to ``parse_event``, so reasons, details and line
numbers are exactly the oracle's. A property test proves both paths agree.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from replay_assets.core.events import ENVELOPE_REQUIRED, ValidationContext
from replay_assets.storage.warehouse import query_frame

ID_RE = r"[A-Za-z0-9][A-Za-z0-9_.|-]{0,79}"
INT_MAX = 10**12
# what the fast path looks at at all: starts an object, no escapes or control characters, and
# no trailing comma (DuckDB's JSON reader accepts ``{"a":1,}``; Python's does not)
CANDIDATE_RE = r"^\{[^\x00-\x1f\\]*$"
TRAILING_COMMA_RE = r",\s*[}\]]"
TIME_RE = (
    r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{3}|\.[0-9]{6})?(Z|\+00:00)"
)
DATE_RE = r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}"

_TOP = ["event_id", "source_seq", "schema_version", "entity", "op", "key", "version", "event_time", "after"]
_ORDER = ["order_id", "line_no", "store_id", "customer_id", "product_id", "business_date", "quantity"]
_ORDER += ["amount_minor", "cost_minor", "status"]
_IMAGE = [*_ORDER, "name", "segment"]
_IMAGE_COLUMNS = ", ".join(
    f"json_type(a[{i}]) AS ta_{c}, a[{i}] ->> '$' AS a_{c}" for i, c in enumerate(_IMAGE, 1)
)

_SQL = rf"""
WITH valid AS (
    SELECT line_number, CASE WHEN json_valid(line) THEN line END AS line FROM _candidates
), parsed AS (
    SELECT line_number, line, json_keys(line) AS top, json_extract(line, ?) AS v
    FROM valid WHERE json_type(line) = 'OBJECT'
), fields AS (
    SELECT line_number, line, top,
        json_type(v[1]) AS t_event_id, v[1] ->> '$' AS event_id,
        json_type(v[2]) AS t_seq, v[2] ->> '$' AS seq_text,
        json_type(v[3]) AS t_schema, v[3] ->> '$' AS schema_text,
        json_type(v[4]) AS t_entity, v[4] ->> '$' AS entity,
        json_type(v[5]) AS t_op, v[5] ->> '$' AS op,
        v[6] AS key_json, json_type(v[6]) AS t_key,
        json_type(v[7]) AS t_version, v[7] ->> '$' AS version_text,
        json_type(v[8]) AS t_time, v[8] ->> '$' AS event_time,
        v[9] AS after_json, json_type(v[9]) AS t_after
    FROM parsed
), nested AS (
    SELECT *,
        CASE WHEN t_key = 'OBJECT' THEN json_keys(key_json) END AS key_keys,
        CASE WHEN t_key = 'OBJECT' THEN json_extract(key_json, ['$.order_id', '$.line_no', '$.customer_id'])
        END AS k,
        CASE WHEN t_after = 'OBJECT' THEN json_keys(after_json) END AS after_keys,
        CASE WHEN t_after = 'OBJECT' THEN json_extract(after_json, ?) END AS a
    FROM fields
), typed AS (
    SELECT line_number, line, top, t_event_id, event_id, t_seq, t_schema, schema_text, t_entity, entity,
        t_op, op, t_key, t_version, t_time, event_time, t_after, key_keys, after_keys,
        TRY_CAST(seq_text AS UBIGINT) AS seq, TRY_CAST(version_text AS UBIGINT) AS version_value,
        json_type(k[1]) AS tk_order_id, k[1] ->> '$' AS k_order_id,
        json_type(k[2]) AS tk_line_no, TRY_CAST(k[2] ->> '$' AS UBIGINT) AS k_line_no,
        json_type(k[3]) AS tk_customer_id, k[3] ->> '$' AS k_customer_id,
        {_IMAGE_COLUMNS}
    FROM nested
), checked AS (
    SELECT *,
        len(top) = len(list_distinct(top))
        AND list_has_all(top, {list(ENVELOPE_REQUIRED)})
        AND list_has_all(?, top)
        AND t_schema = 'UBIGINT' AND schema_text = '1'
        AND t_event_id = 'VARCHAR' AND regexp_full_match(event_id, '{ID_RE}')
        AND t_seq = 'UBIGINT' AND seq <= {INT_MAX}
        AND (t_version IS NULL OR (t_version = 'UBIGINT' AND version_value <= {INT_MAX}))
        AND t_entity = 'VARCHAR' AND entity IN ('order_line', 'customer')
        AND t_op = 'VARCHAR' AND op IN ('upsert', 'delete')
        AND t_time = 'VARCHAR' AND regexp_full_match(event_time, '{TIME_RE}')
        AND TRY_CAST(left(event_time, 19) AS TIMESTAMP) IS NOT NULL
        AND TRY_CAST(left(event_time, 10) AS DATE) IS NOT NULL
        AND t_key = 'OBJECT' AND len(key_keys) = len(list_distinct(key_keys))
        AND (CASE WHEN entity = 'order_line' THEN
                list_sort(key_keys) = ['line_no', 'order_id']
                AND tk_order_id = 'VARCHAR' AND regexp_full_match(k_order_id, '{ID_RE}')
                AND tk_line_no = 'UBIGINT' AND k_line_no <= {INT_MAX}
             ELSE list_sort(key_keys) = ['customer_id']
                AND tk_customer_id = 'VARCHAR' AND regexp_full_match(k_customer_id, '{ID_RE}') END)
        AND (CAST(? AS BIGINT) IS NULL OR seq >= CAST(? AS BIGINT))
        AND (CAST(? AS BIGINT) IS NULL OR seq <= CAST(? AS BIGINT))
        AND (CASE WHEN op = 'delete' THEN t_after IS NULL OR t_after = 'NULL'
             WHEN entity = 'order_line' THEN t_after = 'OBJECT'
                AND len(after_keys) = {len(_ORDER)} AND list_sort(after_keys) = {sorted(_ORDER)}
                AND ta_order_id = 'VARCHAR' AND a_order_id = k_order_id
                AND ta_line_no = 'UBIGINT' AND TRY_CAST(a_line_no AS UBIGINT) = k_line_no
                AND ta_store_id = 'VARCHAR' AND regexp_full_match(a_store_id, '{ID_RE}')
                AND ta_customer_id = 'VARCHAR' AND regexp_full_match(a_customer_id, '{ID_RE}')
                AND ta_product_id = 'VARCHAR' AND regexp_full_match(a_product_id, '{ID_RE}')
                AND ta_business_date = 'VARCHAR' AND regexp_full_match(a_business_date, '{DATE_RE}')
                AND TRY_CAST(a_business_date AS DATE) IS NOT NULL
                AND a_business_date BETWEEN ? AND ?
                AND ta_quantity = 'UBIGINT' AND TRY_CAST(a_quantity AS UBIGINT) <= {INT_MAX}
                AND ta_amount_minor = 'UBIGINT' AND TRY_CAST(a_amount_minor AS UBIGINT) <= {INT_MAX}
                AND ta_cost_minor = 'UBIGINT' AND TRY_CAST(a_cost_minor AS UBIGINT) <= {INT_MAX}
                AND ta_status = 'VARCHAR' AND a_status IN ('active', 'cancelled')
             ELSE t_after = 'OBJECT'
                AND len(after_keys) = 3 AND list_sort(after_keys) = ['customer_id', 'name', 'segment']
                AND ta_customer_id = 'VARCHAR' AND a_customer_id = k_customer_id
                AND ta_name = 'VARCHAR' AND strlen(a_name) BETWEEN 1 AND 200
                AND ta_segment = 'VARCHAR' AND strlen(a_segment) BETWEEN 1 AND 200 END) AS ok
    FROM typed
), certified AS (
    SELECT *,
        CAST(coalesce(version_value, seq) AS BIGINT) AS version,
        CASE WHEN entity = 'order_line' THEN '["' || k_order_id || '",' || k_line_no || ']'
             ELSE '["' || k_customer_id || '"]' END AS key,
        CASE WHEN entity = 'order_line'
             THEN '{{"line_no":' || k_line_no || ',"order_id":"' || k_order_id || '"}}'
             ELSE '{{"customer_id":"' || k_customer_id || '"}}' END AS key_object,
        CASE WHEN op = 'delete' THEN NULL
             WHEN entity = 'order_line' THEN
                '{{"amount_minor":' || a_amount_minor || ',"business_date":"' || a_business_date
                || '","cost_minor":' || a_cost_minor || ',"customer_id":"' || a_customer_id
                || '","line_no":' || a_line_no || ',"order_id":"' || a_order_id
                || '","product_id":"' || a_product_id || '","quantity":' || a_quantity
                || ',"status":"' || a_status || '","store_id":"' || a_store_id || '"}}'
             ELSE '{{"customer_id":"' || a_customer_id || '","name":"' || a_name
                || '","segment":"' || a_segment || '"}}' END AS image_json
    FROM checked WHERE ok
)
SELECT line_number, event_id, CAST(seq AS BIGINT) AS source_seq, entity, op, key, version, event_time,
    sha256('{{"after":' || coalesce(image_json, 'null') || ',"entity":"' || entity || '","event_id":"'
        || event_id || '","event_time":"' || event_time || '","key":' || key_object || ',"op":"' || op
        || '","schema_version":1,"source_seq":' || seq || ',"version":' || version || '}}')
        AS content_sha256,
    coalesce(sha256(image_json), 'tombstone') AS image_sha256,
    CASE WHEN entity = 'order_line' THEN k_order_id END AS order_id,
    CASE WHEN entity = 'order_line' THEN CAST(k_line_no AS BIGINT) END AS line_no,
    CASE WHEN op = 'upsert' AND entity = 'order_line' THEN a_store_id END AS store_id,
    CASE WHEN entity = 'customer' THEN k_customer_id WHEN op = 'upsert' THEN a_customer_id END AS customer_id,
    CASE WHEN op = 'upsert' THEN a_product_id END AS product_id,
    CASE WHEN op = 'upsert' THEN a_business_date END AS business_date,
    CAST(CASE WHEN op = 'upsert' THEN a_quantity END AS BIGINT) AS quantity,
    CAST(CASE WHEN op = 'upsert' THEN a_amount_minor END AS BIGINT) AS amount_minor,
    CAST(CASE WHEN op = 'upsert' THEN a_cost_minor END AS BIGINT) AS cost_minor,
    CASE WHEN op = 'upsert' THEN a_status END AS status,
    CASE WHEN op = 'upsert' THEN a_name END AS name,
    CASE WHEN op = 'upsert' THEN a_segment END AS segment
FROM certified ORDER BY line_number"""


def candidates(lines: pl.DataFrame, max_line_bytes: int) -> pl.Series:
    """Which lines the fast path may look at (``lines`` has ``line``): the rest go to the oracle."""
    line = pl.col("line")
    mask = (
        line.str.contains(CANDIDATE_RE)
        & ~line.str.contains(TRAILING_COMMA_RE)
        & (line.str.len_bytes() <= max_line_bytes)
    )
    return lines.select(mask.alias("candidate"))["candidate"]


def certify(con: duckdb.DuckDBPyConnection, lines: pl.DataFrame, ctx: ValidationContext) -> pl.DataFrame:
    """The certified events among ``lines`` (``line_number``, ``line``; candidates only), one row
    each with the staged-event columns; lines not returned must go through ``parse_event``."""
    start, end = _day(ctx.business_date_start), _day(ctx.business_date_end)
    params: list[object] = [
        [f"$.{name}" for name in _TOP],
        [f"$.{name}" for name in _IMAGE],
        _TOP,
        ctx.seq_low,
        ctx.seq_low,
        ctx.seq_high,
        ctx.seq_high,
        start,
        end,
    ]
    con.register("_candidates", lines.select("line_number", "line"))
    try:
        return query_frame(con, _SQL, params)
    finally:
        con.unregister("_candidates")


def _day(day: dt.date) -> str:
    return day.isoformat()
