"""Certifying the lines written in the contract's canonical renderings, set-based, in SQL any
engine runs (DuckDB's dialect, rendered for Spark by ``rules/render.py``): the engine's tier of
landing, before the oracle.

A line is certified only when one of the grammars of ``core/line_grammar.py`` matches it whole (a
regular expression both engines read alike: Rust's ``regex`` and RE2 take the grammars as written).
The grammar proved the shape: every field once, in a fixed order, every value from its field's
character set with no quote or escape inside. So each value is found by a short pattern on its
field's name (a quote can only be JSON's own), each run once a line (``_once``), and what a grammar
cannot say is checked in SQL: calendar validity of the event time's date and of the business date
(by arithmetic, which no engine's date cast can bend), the business date in the window, the key
equal to the image's key, ``source_seq`` inside the declared slice, an upsert with an image and a
delete without. A line with a run of 19 digits is left to the oracle, and a number's pattern takes
at most 18 digits: Sail may cast before it filters, and its cast of a number no BIGINT holds
raises. The staged-event columns, the canonical texts and their sha256 are ``events_sql``'s, the
same text as the workers' tiers. Every other line goes to the oracle, so reasons, details and line
numbers stay its own. Patterns and bounds are parameters, never pasted.
"""

from __future__ import annotations

from typing import Any

from replay_assets.core.events import ValidationContext
from replay_assets.core.line_grammar import AFTER, GRAMMARS, SORTED, WITH_VERSION
from replay_assets.storage.rules.staged_events import events_sql

INT_MAX = 10**12
# the value of each field, as group 1 of its pattern, on a line a grammar matched
_TEXTS = {
    "event_id": '"event_id":"([^"]*)"',
    "op": '"op":"([a-z]+)"',
    "event_time": '"event_time":"([^"]*)"',
    "k_order_id": '"key":[{][^}]*"order_id":"([^"]*)"',
    "k_customer_id": '"key":[{]"customer_id":"([^"]*)"',
    # an order line's image holds no free text, so no brace inside it; a customer's starts
    # with its id in both renderings
    "a_order_id": '"after":[{][^}]*"order_id":"([^"]*)"',
    "a_customer_id": '"after":[{][^}]*"customer_id":"([^"]*)"',
    **{f"a_{n}": f'"{n}":"([^"]*)"' for n in ("store_id", "product_id", "business_date", "status")},
    **{f"a_{n}": f'"{n}":"([^"]*)"' for n in ("name", "segment")},
}
_INTS = {
    "source_seq": '"source_seq":([0-9]{1,18})[,}]',
    "version_n": '"version":([0-9]{1,18})[,}]',
    "k_line_no": '"key":[{][^}]*"line_no":([0-9]{1,18})[,}]',
    "a_line_no": '"after":[{][^}]*"line_no":([0-9]{1,18})[,}]',
    **{f"a_{n}": f'"{n}":([0-9]{{1,18}})[,}}]' for n in ("quantity", "amount_minor", "cost_minor")},
}


def _entity() -> str:
    cases = " ".join(f"WHEN {i} THEN '{entity}'" for i, (entity, _, _) in enumerate(GRAMMARS))
    return f"CASE grammar {cases} END"


def _sorted() -> str:
    sort = ", ".join(str(i) for i, (_, _, by_name) in enumerate(GRAMMARS) if by_name)
    return f"CASE WHEN grammar IN ({sort}) THEN 1 ELSE 0 END"


def _calendar(prefix: str) -> str:
    """Whether the ``{prefix}_y``, ``_m``, ``_d`` columns name a day of the Gregorian calendar."""
    y, m, d = (f"{prefix}_{p}" for p in "ymd")
    leap = f"({y} % 4 = 0 AND {y} % 100 <> 0) OR {y} % 400 = 0"
    february = f"CASE WHEN {leap} THEN 29 ELSE 28 END"
    days = f"CASE WHEN {m} = 2 THEN {february} WHEN {m} IN (4, 6, 9, 11) THEN 30 ELSE 31 END"
    return f"({m} BETWEEN 1 AND 12 AND {d} BETWEEN 1 AND {days})"


def _once(value: str) -> str:
    """``value`` unnested from a one-element list: computed once a line. An engine pushes a later
    step's filter down through plain projections, inlining each column it names at every use
    (a value's pattern run again for each); no filter on an unnested column passes below the
    unnest."""
    return f"unnest([{value}])"


def _parts(column: str, prefix: str) -> str:
    """Year, month and day of ``column`` as integers, ``struct_pack`` fields; null unless it
    starts ``dddd-dd-dd`` (an engine's cast of other text raises, and Sail may cast before it
    filters). Each part is a group of one pattern, not a ``substr``: Sail's cluster mode failed
    to find ``substr`` again where it decoded the plan, as it did ``strpos`` and ``nullif``."""
    return ", ".join(
        f"{prefix}_{p} := CAST(CASE WHEN regexp_matches({column}, $date_prefix)"
        f" THEN regexp_extract({column}, $date_prefix, {group}) END AS INTEGER)"
        for group, p in enumerate("ymd", start=1)
    )


_GRAMMAR = " ".join(f"WHEN regexp_matches(line, $g{i}) THEN {i}" for i in range(len(GRAMMARS)))
# the values as one struct, each pattern run once a line
_RAW = _once(
    "struct_pack(" + ", ".join(f"r_{n} := regexp_extract(line, $p_{n}, 1)" for n in {**_TEXTS, **_INTS}) + ")"
)
# no match is the empty text, and so is an empty value: both null (a CASE, as Sail's cluster mode
# cannot ship ``nullif`` to its workers)
_VALUES = ",\n        ".join(
    [
        *(f"CASE WHEN r.r_{n} = '' THEN NULL ELSE r.r_{n} END AS {n}" for n in _TEXTS),
        *(f"CAST(CASE WHEN r.r_{n} = '' THEN NULL ELSE r.r_{n} END AS BIGINT) AS {n}" for n in _INTS),
    ]
)
# LIKE, not ``strpos``: a pattern is an operator every engine plans itself, where Sail's cluster
# mode may fail to find ``strpos`` again on the side that decodes the plan
_FORM = """CASE WHEN line LIKE '%"after":{%' THEN 2 WHEN line LIKE '%"after":null%' THEN 1 ELSE 0 END"""

CANONICAL_LINES_SQL = f"""
WITH matched AS (
    SELECT source_file, line_number, line, {_once(f"CASE {_GRAMMAR} END")} AS grammar
    FROM _lines
), typed AS (
    SELECT source_file, line_number, {_entity()} AS entity,
        {_sorted()} * {SORTED} + (CASE WHEN line LIKE '%"version":%' THEN 1 ELSE 0 END) * {WITH_VERSION}
            + ({_FORM}) * {AFTER} AS rendering,
        {_RAW} AS r
    FROM matched WHERE grammar IS NOT NULL AND NOT regexp_matches(line, $long_digits)
), valued AS (
    SELECT source_file, line_number, entity, rendering,
        {_VALUES}
    FROM typed
), dated AS (
    SELECT *, coalesce(version_n, source_seq) AS version, p.t_y, p.t_m, p.t_d, p.b_y, p.b_m, p.b_d
    FROM (
        SELECT *, {_once(f"struct_pack({_parts('event_time', 't')}, {_parts('a_business_date', 'b')})")} AS p
        FROM valued
    )
), checked AS (
    SELECT * FROM dated
    WHERE {_calendar("t")}
        AND (op = 'upsert') = (rendering >= {2 * AFTER})
        AND source_seq BETWEEN $seq_low AND $seq_high
        AND CASE WHEN op = 'delete' THEN true
                 WHEN entity = 'order_line' THEN a_order_id = k_order_id AND a_line_no = k_line_no
                    AND {_calendar("b")} AND a_business_date BETWEEN $start AND $end
                 ELSE a_customer_id = k_customer_id END
)
{events_sql("checked", hashed=True, carry=("source_file", "rendering"))}"""


def parameters(ctx: ValidationContext) -> dict[str, Any]:
    """The statement's parameters for ``ctx``: the grammars (anchored: a match is the whole
    line), the value patterns, the declared slice (all of 0..1e12 when open) and the window."""
    found: dict[str, Any] = {f"g{i}": f"^(?:{g.pattern})$" for i, (_, g, _) in enumerate(GRAMMARS)}
    found.update({f"p_{n}": p for n, p in {**_TEXTS, **_INTS}.items()})
    found["long_digits"] = "[0-9]{19}"  # a number no BIGINT holds: the oracle's to decide
    found["date_prefix"] = "^([0-9]{4})-([0-9]{2})-([0-9]{2})"
    found.update(
        seq_low=0 if ctx.seq_low is None else ctx.seq_low,
        seq_high=INT_MAX if ctx.seq_high is None else ctx.seq_high,
        start=ctx.business_date_start.isoformat(),
        end=ctx.business_date_end.isoformat(),
    )
    return found
