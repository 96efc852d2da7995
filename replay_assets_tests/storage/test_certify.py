"""The grammar's certification (``storage/landing/certify.py``) certifies a line only when the
oracle ``parse_event`` accepts it, and then gives exactly the oracle's event; every line in the
contract's two renderings is certified."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.events import Event, ValidationContext, parse_event
from replay_assets.storage.landing.certify import certify
from replay_assets_tests.storage.test_validation_fast_path import (
    BASE,
    CTX,
    CUSTOMER,
    DELETE,
    SLICED,
    expected,
    lines,
)


def certified(
    lines_: list[str], ctx: ValidationContext, skip: list[int] | None = None
) -> dict[int, dict[str, Any]]:
    out = {}
    for values in certify(ctx, lines_, skip=skip or []).to_dicts():
        values.pop("rendering")
        out[values.pop("line_index")] = values
    return out


def renderings(event: dict[str, Any]) -> list[str]:
    return [
        json.dumps(event, separators=(",", ":"), ensure_ascii=False),
        json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    ]


def variants() -> list[dict[str, Any]]:
    """Each entity and op, with and without ``version``, a delete with ``after`` null or absent."""
    out = []
    for event in (BASE, CUSTOMER, DELETE, {**CUSTOMER, "op": "delete", "after": None}):
        out.append(event)
        out.append({k: v for k, v in event.items() if k != "version"})
        if event["op"] == "delete":
            out.append({k: v for k, v in event.items() if k != "after"})
    return out


def test_both_renderings_of_every_shape_are_certified_with_the_oracles_values() -> None:
    lines_ = [line for event in variants() for line in renderings(event)]
    got = certified(lines_, CTX)
    assert sorted(got) == list(range(len(lines_)))
    for index, line in enumerate(lines_):
        event = parse_event(line, CTX)
        assert isinstance(event, Event)
        assert got[index] == expected(event), line


def test_lines_the_oracle_refuses_or_another_layout_are_left_to_it() -> None:
    compact = renderings(BASE)[0]
    refused = [
        compact.replace('"line_no":1}', '"line_no":2}', 1),  # key differs from the image
        compact.replace("2026-09-30", "2026-02-30"),  # not a calendar date
        compact.replace("2026-09-30", "2026-10-03"),  # outside the window
        compact.replace("2026-10-01T00", "2026-02-30T00"),  # an event time on no calendar
        compact.replace('"quantity":2', '"quantity":02'),  # not JSON
        compact.replace('"quantity":2', '"quantity":1000000000001'),  # over 1e12
        compact.replace('"quantity":2', '"quantity":2.0'),
        compact.replace('"op":"upsert"', '"op":"delete"'),  # a delete with an image
        renderings(DELETE)[0].replace('"op":"delete"', '"op":"upsert"'),  # an upsert without one
        compact.replace('"schema_version":1', '"schema_version":2'),
        compact.replace('"S1"', '"S\\u0031"'),  # an escape: the oracle reads S1, the grammar refuses
        compact[:-1] + ',"op":"upsert"}',  # a duplicated field
        json.dumps(BASE),  # spaced: DuckDB's JSON path takes it
        renderings({**CUSTOMER, "after": {**CUSTOMER["after"], "name": "x" * 201}})[0],
    ]
    assert certified(refused, CTX) == {}
    assert not isinstance(parse_event(refused[-1], CTX), Event)
    sliced = [renderings({**BASE, "source_seq": seq})[0] for seq in (9, 10, 500, 501)]  # slice 10..500
    assert sorted(certified(sliced, SLICED)) == [1, 2]


def test_lines_to_skip_are_never_certified_and_the_rest_keep_their_index() -> None:
    """A line rejected while it was read keeps only evidence text, which may look valid."""
    lines_ = [line for event in variants() for line in renderings(event)]
    got = certified(lines_, CTX, skip=[0, 3, len(lines_) - 1])
    assert sorted(got) == [i for i in range(len(lines_)) if i not in (0, 3, len(lines_) - 1)]
    assert certified(lines_, CTX, skip=list(range(len(lines_)))) == {}
    assert certified([], CTX) == {}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines(), min_size=1, max_size=30), st.booleans())
def test_the_grammar_certifies_only_what_the_oracle_accepts_and_agrees_on_it(
    lines_: list[str], sliced: bool
) -> None:
    ctx = SLICED if sliced else CTX
    for index, values in certified(lines_, ctx).items():
        outcome = parse_event(lines_[index], ctx)
        assert isinstance(outcome, Event), (lines_[index], outcome)
        assert values == expected(outcome), lines_[index]
