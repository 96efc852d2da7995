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

from replay_assets.core.events import (
    CUSTOMER_IMAGE,
    ENVELOPE_REQUIRED,
    ID_PATTERN,
    ORDER_IMAGE,
    ValidationContext,
)
from replay_assets.storage.db.warehouse import query_frame
from replay_assets.storage.rules.staged_events import CUSTOMER as _CUSTOMER
from replay_assets.storage.rules.staged_events import IMAGE_INTS as _IMAGE_INTS
from replay_assets.storage.rules.staged_events import concat_sql as _concat
from replay_assets.storage.rules.staged_events import events_sql
from replay_assets.storage.rules.staged_events import image_sql as _image
from replay_assets.storage.rules.staged_events import json_object as _object
from replay_assets.storage.rules.staged_events import piece as _piece

ID_RE = ID_PATTERN.pattern
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

_TOP = ["event_id", "source_seq", "schema_version", "entity", "op", "version", "event_time", "after"]
T1_KEY = ["order_id", "line_no", "customer_id"]
_ORDER = list(ORDER_IMAGE)
T1_IMAGE = [*_ORDER, *(c for c in CUSTOMER_IMAGE if c not in ORDER_IMAGE)]
PATHS = [f"$.{n}" for n in _TOP] + [f"$.key.{n}" for n in T1_KEY] + [f"$.after.{n}" for n in T1_IMAGE]
_FIELDS = [*_TOP, *(f"k_{n}" for n in T1_KEY), *(f"a_{n}" for n in T1_IMAGE)]
_AT = {name: i for i, name in enumerate(_FIELDS, 1)}


def _text(name: str) -> str:
    """A JSON string value as text (no escapes reach this path), else NULL."""
    return f"""CASE WHEN starts_with(v[{_AT[name]}], '"') THEN v[{_AT[name]}][2:-2] END AS {name}"""


def _int(name: str) -> str:
    """A JSON integer in 0..1e12, else NULL (json_extract writes integers as plain digits)."""
    at = _AT[name]
    return f"""CASE WHEN regexp_full_match(v[{at}], '[0-9]{{1,13}}') AND CAST(v[{at}] AS BIGINT) <= {INT_MAX}
                THEN CAST(v[{at}] AS BIGINT) END AS {name}"""


_TEXTS = ["event_id", "entity", "op", "event_time", "k_order_id", "k_customer_id"]
_TEXTS += [f"a_{n}" for n in T1_IMAGE if n not in ("line_no", "quantity", "amount_minor", "cost_minor")]
_INTS = ["source_seq", "k_line_no", "a_line_no", "a_quantity", "a_amount_minor", "a_cost_minor"]
_VALUES = ",\n        ".join([*(_text(n) for n in _TEXTS), *(_int(n) for n in _INTS)])

_T1_INTS = ["source_seq", "k_line_no", *(f"a_{n}" for n in _IMAGE_INTS)]
_BIGINT = {"source_seq", "schema_version", "version", "line_no", *_IMAGE_INTS}


def _key(order: list[str]) -> str:
    fields = [(n, f"k_{n}", n != "line_no") for n in order]
    return f"""CASE entity WHEN 'order_line' THEN {_object(fields)}
        WHEN 'customer' THEN {_object([("customer_id", "k_customer_id", True)])} END"""


def _struct(names: list[str]) -> str:
    """A json_transform structure: every field as text, integers as BIGINT."""
    return ",".join(f'"{n}":"{"BIGINT" if n in _BIGINT else "VARCHAR"}"' for n in names)


_VERSION = """CASE WHEN version_n IS NULL THEN '' ELSE concat(',"version":', version_n) END"""
# the layout producers write in the contract's field order, compact
_SPEC_RENDERING = _concat(
    [
        "'{'",
        *_piece("event_id", "event_id", True),
        "','",
        *_piece("source_seq", "source_seq", False),
        "','",
        *_piece("schema_version", "sv", False),
        "','",
        *_piece("entity", "entity", True),
        "','",
        *_piece("op", "op", True),
        """',"key":'""",
        _key(["order_id", "line_no"]),
        _VERSION,
        "','",
        *_piece("event_time", "event_time", True),
        f"""CASE WHEN NOT after_null THEN concat(',"after":', {_image(_ORDER, _CUSTOMER)})
            WHEN contains(line, ',"after":null}}') THEN ',"after":null' ELSE '' END""",
        "'}'",
    ]
)
# the canonical layout (sorted keys, compact): what canonical_json and Parquet deliveries give
_SORTED_RENDERING = _concat(
    [
        "'{'",
        f"""CASE WHEN NOT after_null THEN concat('"after":', {_image(sorted(_ORDER), sorted(_CUSTOMER))}, ',')
            WHEN starts_with(line, '{{"after":null,') THEN '"after":null,' ELSE '' END""",
        *_piece("entity", "entity", True),
        "','",
        *_piece("event_id", "event_id", True),
        "','",
        *_piece("event_time", "event_time", True),
        """',"key":'""",
        _key(["line_no", "order_id"]),
        "','",
        *_piece("op", "op", True),
        "','",
        *_piece("schema_version", "sv", False),
        "','",
        *_piece("source_seq", "source_seq", False),
        _VERSION,
        "'}'",
    ]
)
T1_STRUCT = f"""{{{_struct(_TOP[:-1])},"key":{{{_struct(T1_KEY)}}},"after":{{{_struct(T1_IMAGE)}}}}}"""


def _checked(source: str, lists: bool) -> str:
    """The contract's rules over typed values; with ``lists``, also the field-name rules (the
    exact-rendering tier proved those already)."""

    def when(text: str) -> str:
        return text if lists else "true"

    return f"""
    SELECT *, CASE WHEN version_text IS NULL THEN source_seq
                   WHEN regexp_full_match(version_text, '[0-9]{{1,13}}')
                        AND CAST(version_text AS BIGINT) <= {INT_MAX}
                   THEN CAST(version_text AS BIGINT) END AS version,
        ({when(f"len(top) = len(list_distinct(top)) AND list_has_all(top, {list(ENVELOPE_REQUIRED)})")}
        AND {when("list_has_all($allowed, top)")}
        AND schema_text = '1'
        AND regexp_full_match(event_id, '{ID_RE}')
        AND source_seq IS NOT NULL
        AND (version_text IS NULL OR regexp_full_match(version_text, '[0-9]{{1,13}}'))
        AND entity IN ('order_line', 'customer')
        AND op IN ('upsert', 'delete')
        AND regexp_full_match(event_time, '{TIME_RE}')
        AND TRY_CAST(left(event_time, 19) AS TIMESTAMP) IS NOT NULL
        AND TRY_CAST(left(event_time, 10) AS DATE) IS NOT NULL
        AND {when("len(key_keys) = len(list_distinct(key_keys))")}
        AND (CASE WHEN entity = 'order_line' THEN
                {when("list_sort(key_keys) = ['line_no', 'order_id']")}
                AND regexp_full_match(k_order_id, '{ID_RE}') AND k_line_no IS NOT NULL
             ELSE {when("list_sort(key_keys) = ['customer_id']")}
                AND regexp_full_match(k_customer_id, '{ID_RE}') END)
        AND ($seq_low IS NULL OR source_seq >= $seq_low)
        AND ($seq_high IS NULL OR source_seq <= $seq_high)
        AND (CASE WHEN op = 'delete' THEN after_text IS NULL OR after_text = 'null'
             WHEN entity = 'order_line' THEN
                {when(f"len(after_keys) = {len(_ORDER)} AND list_sort(after_keys) = {sorted(_ORDER)}")}
                AND a_order_id = k_order_id AND a_line_no = k_line_no
                AND regexp_full_match(a_store_id, '{ID_RE}')
                AND regexp_full_match(a_customer_id, '{ID_RE}')
                AND regexp_full_match(a_product_id, '{ID_RE}')
                AND regexp_full_match(a_business_date, '{DATE_RE}')
                AND TRY_CAST(a_business_date AS DATE) IS NOT NULL
                AND a_business_date BETWEEN $start AND $end
                AND a_quantity IS NOT NULL AND a_amount_minor IS NOT NULL AND a_cost_minor IS NOT NULL
                AND a_status IN ('active', 'cancelled')
             ELSE {when("len(after_keys) = 3 AND list_sort(after_keys) = ['customer_id', 'name', 'segment']")}
                AND a_customer_id = k_customer_id
                AND strlen(a_name) BETWEEN 1 AND 200
                AND strlen(a_segment) BETWEEN 1 AND 200 END)) AS ok
    FROM {source}"""


_SQL = rf"""
WITH t1 AS MATERIALIZED (
    SELECT line_number, line, try(json_transform(line, '{T1_STRUCT}')) AS e FROM _SOURCE_
), t1_flat AS MATERIALIZED (
    SELECT line_number, line, e.event_id AS event_id, e.source_seq AS source_seq, e.schema_version AS sv,
        e.entity AS entity, e.op AS op, e.version AS version_n, e.event_time AS event_time,
        e.after IS NULL AS after_null,
        {", ".join(f"e.key.{n} AS k_{n}" for n in T1_KEY)},
        {", ".join(f"e.after.{n} AS a_{n}" for n in T1_IMAGE)}
    FROM t1 WHERE e IS NOT NULL
), t1_ok AS MATERIALIZED (
    SELECT * EXCLUDE (line),
        CASE WHEN NOT after_null THEN '{{}}' WHEN contains(line, '"after":null') THEN 'null' END AS after_text
    FROM t1_flat
    WHERE CASE WHEN line = {_SPEC_RENDERING} THEN true ELSE line = {_SORTED_RENDERING} END
        AND NOT regexp_matches(coalesce(a_name, '') || coalesce(a_segment, ''), '[\x00-\x1f]')
), typed1 AS (
    SELECT line_number, event_id, entity, op, event_time,
        CAST(sv AS VARCHAR) AS schema_text, CAST(version_n AS VARCHAR) AS version_text, after_text,
        k_order_id, k_customer_id, {", ".join(f"a_{n}" for n in T1_IMAGE if n not in _IMAGE_INTS)},
        {", ".join(f"CASE WHEN {n} BETWEEN 0 AND {INT_MAX} THEN {n} END AS {n}" for n in _T1_INTS)}
    FROM t1_ok
), rest AS MATERIALIZED (
    SELECT line_number, line FROM _SOURCE_ ANTI JOIN t1_ok USING (line_number)
), valid AS (
    SELECT line_number, CASE WHEN json_valid(line) THEN line END AS line FROM rest
    WHERE regexp_full_match(line, '{CANDIDATE_RE}') AND NOT regexp_matches(line, '{TRAILING_COMMA_RE}')
), parsed AS MATERIALIZED (
    SELECT line_number, json_keys(line, ['$', '$.key', '$.after']) AS ks,
        CAST(json_extract(line, $paths) AS VARCHAR[]) AS v
    FROM valid WHERE line IS NOT NULL
), typed2 AS MATERIALIZED (
    SELECT line_number, ks[1] AS top, ks[2] AS key_keys, ks[3] AS after_keys,
        v[{_AT["schema_version"]}] AS schema_text, v[{_AT["version"]}] AS version_text,
        v[{_AT["after"]}] AS after_text,
        {_VALUES}
    FROM parsed
), typed AS (
    SELECT * FROM typed1 UNION ALL BY NAME SELECT * FROM typed2
), checked1 AS MATERIALIZED ({_checked("typed1", lists=False)}
), checked2 AS MATERIALIZED ({_checked("typed2", lists=True)}
), checked AS (
    SELECT * FROM checked1 UNION ALL BY NAME SELECT * FROM checked2
), certified AS (
    SELECT * FROM checked WHERE ok AND version IS NOT NULL
)
""" + events_sql("certified", hashed=True)


def candidates(lines: pl.DataFrame, max_line_bytes: int) -> pl.Series:
    """Which lines the fast path may look at (``lines`` has ``line``): the rest go to the oracle.
    Cheap on purpose; the SQL decides the rest."""
    line = pl.col("line")
    mask = line.str.starts_with("{") & (line.str.len_bytes() <= max_line_bytes)
    return lines.select(mask.alias("candidate"))["candidate"]


def certified_sql(ctx: ValidationContext, source: str = "_candidates") -> tuple[str, dict[str, object]]:
    """A query over the relation ``source`` (``line_number``, ``line``; candidates only; SQL
    text of our own, never a value) giving one row per certified event with the staged-event
    columns, and its parameters. Lines without a row must go through ``parse_event``."""
    params: dict[str, object] = {
        "paths": PATHS,
        "allowed": [*_TOP, "key"],
        "seq_low": ctx.seq_low,
        "seq_high": ctx.seq_high,
        "start": _day(ctx.business_date_start),
        "end": _day(ctx.business_date_end),
    }
    return _SQL.replace("_SOURCE_", source), params


def certify(con: duckdb.DuckDBPyConnection, lines: pl.DataFrame, ctx: ValidationContext) -> pl.DataFrame:
    """The certified events among a frame of lines, ordered by line number."""
    sql, params = certified_sql(ctx)
    con.register("_candidates", lines.select("line_number", "line"))
    try:
        return query_frame(con, f"SELECT * FROM ({sql}) ORDER BY line_number", params)
    finally:
        con.unregister("_candidates")


def _day(day: dt.date) -> str:
    return day.isoformat()
