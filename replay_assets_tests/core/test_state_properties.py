"""Semantics of the reference pipeline: order, batching, duplication and replay do not matter."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import aggregate_images
from replay_assets.core.state import Batch, LoadDateOutcome, Row, apply_load_date
from replay_assets_tests.core.strategies import CTX, deliveries, histories, truth


def run_days(days: list[list[str]]) -> tuple[dict, list[LoadDateOutcome]]:
    state: dict = {}
    registry: dict = {}
    outcomes = []
    for n, lines in enumerate(days):
        out = apply_load_date(
            state, registry, [Batch("erp", f"b{n}", "t", lines)], f"2026-02-{n + 1:02d}", lambda _: CTX
        )
        assert not out.blocked
        state, registry = out.state, out.registry
        outcomes.append(out)
    return state, outcomes


def simplified(state: dict) -> dict:
    return {tuple(json.loads(key)): (row.version, row.image) for (_, key), row in state.items()}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_delivery_gives_the_highest_version_per_key(data: st.DataObject) -> None:
    history = data.draw(histories())
    state, outcomes = run_days(data.draw(deliveries(history)))
    assert simplified(state) == truth(history)
    for out in outcomes:
        assert all(c.balanced() for c in out.counts.values())


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_incremental_equals_full_rebuild_and_replay_is_a_noop(data: st.DataObject) -> None:
    history = data.draw(histories())
    days = data.draw(deliveries(history))
    incremental, _ = run_days(days)
    rebuilt, _ = run_days([[line for day in days for line in day]])
    assert simplified(incremental) == simplified(rebuilt)
    replayed, outcomes = run_days([*days, *days])
    assert replayed == incremental
    for out in outcomes[len(days) :]:
        assert all(c.accepted == 0 and c.skipped_stale == 0 for c in out.counts.values())


def active_images(state: dict) -> list[dict]:
    return [row.image for row in state.values() if row.image is not None]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_repairing_affected_groups_equals_full_recomputation(data: st.DataObject) -> None:
    days = data.draw(deliveries(data.draw(histories())))
    state: dict[tuple[str, str], Row] = {}
    registry: dict = {}
    published: dict[tuple[str, str], dict] = {}
    for n, lines in enumerate(days):
        out = apply_load_date(state, registry, [Batch("erp", f"b{n}", "t", lines)], "d", lambda _: CTX)
        state, registry = out.state, out.registry
        fresh = {(g["business_date"], g["store_id"]): g for g in aggregate_images(active_images(state))}
        for group in out.affected:
            published.pop(group, None)
            if group in fresh:
                published[group] = fresh[group]
    full = aggregate_images(active_images(state))
    assert sorted(published.values(), key=lambda g: (g["store_id"], g["business_date"])) == full
