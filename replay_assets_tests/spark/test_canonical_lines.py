"""The engine's canonical-line rule (``storage/rules/canonical_lines.py``), run on a real Sail,
certifies a line only when the oracle ``parse_event`` accepts it, and then gives exactly the
oracle's event; on every line it agrees with the workers' grammar tier (``certify.py``, DuckDB),
rendering included, so receipts and staged rows are the same whichever engine landed them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from replay_assets.core.events import Event, ValidationContext, parse_event
from replay_assets.storage.landing.certify import certify
from replay_assets.storage.rules import canonical_lines
from replay_assets.storage.spark.dialect import shared
from replay_assets_tests.storage.test_certify import renderings, variants
from replay_assets_tests.storage.test_validation_fast_path import BASE, CTX, CUSTOMER, SLICED, expected, lines


def certified(spark: SparkSession, lines_: list[str], ctx: ValidationContext) -> dict[int, dict[str, Any]]:
    """The rule's rows by line index, ``rendering`` kept."""
    frame = spark.createDataFrame(
        [("f.jsonl", i, line) for i, line in enumerate(lines_)],
        "source_file string, line_number long, line string",
    )
    frame.createOrReplaceTempView("_lines")
    out = {}
    for row in shared(spark, canonical_lines.CANONICAL_LINES_SQL, canonical_lines.parameters(ctx)).collect():
        values = row.asDict()
        assert values.pop("source_file") == "f.jsonl"
        out[values.pop("line_number")] = values
    return out


def grammar_tier(lines_: list[str], ctx: ValidationContext) -> dict[int, dict[str, Any]]:
    return {v.pop("line_index"): v for v in certify(ctx, lines_).to_dicts()}


def _agrees(spark: SparkSession, lines_: list[str], ctx: ValidationContext) -> dict[int, dict[str, Any]]:
    got = certified(spark, lines_, ctx)
    assert got == grammar_tier(lines_, ctx)
    for index, values in got.items():
        outcome = parse_event(lines_[index], ctx)
        assert isinstance(outcome, Event), (lines_[index], outcome)
        assert {k: v for k, v in values.items() if k != "rendering"} == expected(outcome), lines_[index]
    return got


def test_both_renderings_of_every_shape_are_certified_with_the_oracles_values(spark: SparkSession) -> None:
    lines_ = [line for event in variants() for line in renderings(event)]
    assert sorted(_agrees(spark, lines_, CTX)) == list(range(len(lines_)))


def _order(**after: Any) -> str:
    return renderings({**BASE, "after": {**BASE["after"], **after}})[0]


def test_hostile_lines_are_left_to_the_oracle(spark: SparkSession) -> None:
    compact = renderings(BASE)[0]
    hostile = [
        compact.replace('"line_no":1}', '"line_no":2}', 1),  # key differs from the image
        _order(business_date="2026-02-29"),  # no such day in 2026
        _order(business_date="2026-04-31"),
        _order(business_date="2026-13-01"),
        _order(business_date="2026-00-10"),
        _order(business_date="2026-10-03"),  # outside the window
        compact.replace("2026-10-01T00", "2025-02-29T00"),  # an event time on no calendar
        compact.replace("2026-10-01T00", "1900-02-29T00"),  # not a leap year
        compact.replace('"2026-10-01T00:00:00Z"', '"x"'),  # no date to cast (an engine's cast raises)
        _order(business_date="x"),
        _order(business_date="2026-1x-01"),
        compact.replace('"quantity":2', '"quantity":02'),
        compact.replace('"quantity":2', '"quantity":1000000000001'),
        compact.replace('"quantity":2', '"quantity":99999999999999999999999'),
        compact.replace('"quantity":2', '"quantity":-2'),
        compact.replace('"op":"upsert"', '"op":"delete"'),  # a delete with an image
        compact.replace('"S1"', '"S\\u0031"'),  # an escape: the oracle reads S1
        compact.replace('"O1"', '"\\u004f1"', 1),
        compact[:-1] + ',"op":"upsert"}',  # a duplicated field
        compact + "\r",  # a CRLF line's carriage return
        compact + " ",
        " " + compact,
        json.dumps(BASE),  # spaced
        "",
        "{}",
        renderings({**CUSTOMER, "after": {**CUSTOMER["after"], "name": "x" * 201}})[0],
        renderings({**CUSTOMER, "after": {**CUSTOMER["after"], "name": 'a"b'}})[0],
        renderings({**CUSTOMER, "key": {"customer_id": "C2"}})[0],
    ]
    assert _agrees(spark, hostile, CTX) == {}
    leap = [
        _order(business_date="2024-02-29"),
        compact.replace("2026-10-01T00", "2000-02-29T00"),
        renderings({**CUSTOMER, "after": {**CUSTOMER["after"], "name": "a}b {after:{"}})[1],  # braces
    ]
    ctx = ValidationContext(CTX.business_date_start.replace(year=2024), CTX.business_date_end)
    assert sorted(_agrees(spark, leap, ctx)) == [0, 1, 2]
    sliced = [renderings({**BASE, "source_seq": seq})[0] for seq in (9, 10, 500, 501)]  # slice 10..500
    assert sorted(_agrees(spark, sliced, SLICED)) == [1, 2]


def test_each_value_pattern_runs_once_a_line(spark: SparkSession) -> None:
    """The engine's physical plan extracts each field once: the checks of the later steps are not
    pushed down to the lines with every value's extraction inlined at each use."""
    certified(spark, [renderings(BASE)[0]], CTX)  # plans the statement over ``_lines``
    arguments = canonical_lines.parameters(CTX)
    plan = shared(spark, canonical_lines.CANONICAL_LINES_SQL, arguments)._explain_string()
    values = len([name for name in arguments if name.startswith("p_")])
    assert plan.count("regexp_extract(") == values + 2 * 3  # and each date's year, month and day


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines(), min_size=1, max_size=40), st.booleans())
def test_the_rule_certifies_only_what_the_oracle_accepts_and_agrees_with_the_grammar_tier(
    spark: SparkSession, lines_: list[str], sliced: bool
) -> None:
    _agrees(spark, lines_, SLICED if sliced else CTX)
