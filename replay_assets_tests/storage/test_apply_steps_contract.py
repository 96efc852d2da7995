"""The steps of applying a load date that stage the fold and write what it decided
(``storage/apply/steps.py``) give the same rows and answers on every engine: the same delivery
landed on both stores, then staged and written by each store's steps, every written table and
every returned value compared. Duplicates, a stale replay, a delete, a move to another store
and day, two batches, a customer and a conflicting event id are in the delivery."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from replay_assets.storage.db.apply_steps import DuckDBApplySteps
from replay_assets.storage.landing import area
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide, plan_for
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.stores import STORES, open_store, table_rows

NOW = dt.datetime(2026, 1, 10, 12, tzinfo=dt.UTC)
DAY = "2026-01-02"
WRITTEN = (
    "order_history",
    "customer_history",
    "event_registry",
    "restatement_queue",
    "watermarks",
    "reconciliation",
    "load_dates",
    "partition_status",
)


def _order(seq: int, order: str, *, event_id: str | None = None, op: str = "upsert", **image: Any) -> str:
    after = {
        "order_id": order,
        "line_no": 1,
        "store_id": "s1",
        "customer_id": "c1",
        "product_id": "p1",
        "business_date": "2026-01-01",
        "quantity": 1,
        "amount_minor": 100 * seq,
        "cost_minor": 50,
        "status": "active",
        **image,
    }
    body = {
        "event_id": event_id or f"e{seq}",
        "source_seq": seq,
        "schema_version": 1,
        "entity": "order_line",
        "op": op,
        "key": {"order_id": order, "line_no": 1},
        "version": seq,
        "event_time": "2026-01-01T00:00:00Z",
        "after": after if op == "upsert" else None,
    }
    return json.dumps(body, separators=(",", ":"))


FIRST = [_order(n, f"o{n % 4}", store_id=f"s{n % 3}") for n in range(1, 9)]
SECOND = [
    FIRST[1],  # a duplicate delivery
    _order(3, "o3", event_id="e3-replay", store_id="s0"),  # a stale replay under a new event id
    _order(20, "o1", op="delete"),
    _order(21, "o2", store_id="s9", business_date="2026-01-02"),  # moved to another store and day
    _order(22, "o0", event_id="e5"),  # an event id used before with other content: a violation
    json.dumps(
        {
            "event_id": "c1",
            "source_seq": 30,
            "schema_version": 1,
            "entity": "customer",
            "op": "upsert",
            "key": {"customer_id": "c1"},
            "event_time": "2026-01-01T00:00:00Z",
            "after": {"customer_id": "c1", "name": "Ada", "segment": "retail"},
        },
        separators=(",", ":"),
    ),
]


def _steps(opened: Any, unit: Any) -> Any:
    if opened.kind == "duckdb":
        return DuckDBApplySteps(unit.con)
    from replay_assets.storage.spark.apply import SparkApplySteps

    return SparkApplySteps(unit)


def _apply_writes(opened: Any, plan: Any) -> dict[str, Any]:
    with opened.store.transaction() as unit:
        steps = _steps(opened, unit)
        answers: dict[str, Any] = {
            "identity": steps.applied_identity(DAY),
            "newest": steps.newest_applied(),
            "holds": steps.latest_holds_before(DAY),
        }
        steps.stage_fold([b.batch_id for b in plan.batches], DAY)
        try:
            answers["counts"] = steps.batch_counts(plan)
            answers["violations"] = steps.violations(plan).rows()
            answers["dates"] = steps.affected_groups()
            answers["history"] = steps.write_history(DAY)
            steps.register_events(DAY)
            answers["groups"] = steps.queue_groups(answers["dates"], DAY, NOW)
            steps.advance_watermarks(plan, DAY)
            steps.write_reconciliation(plan, answers["counts"], "APPLIED")
            steps.record_applied(DAY, plan.identity, NOW, "run-1")
        finally:
            steps.drop_fold()
        answers["after"] = (steps.applied_identity(DAY), steps.newest_applied())
    return answers


def test_the_fold_and_its_writes_are_the_same_on_every_engine(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    pipeline = Pipeline(settings_for(tmp_path / "plan-home", "2026-01-10T12:00:00Z"))
    landing = pipeline.settings.landing
    for batch, lines, hour in (("B1", FIRST, 1), ("B2", SECOND, 2)):
        write_delivery(landing, "erp", DAY, batch, lines, ready_at=f"{DAY}T0{hour}:00:00Z")
    plan = plan_for(decide(pipeline), DAY)
    found: dict[str, dict[str, Any]] = {}
    for kind in STORES:
        with open_store(request, kind, tmp_path / kind) as opened:
            for seen in area.scan(landing, pipeline.settings.limits):
                assert seen.manifest is not None
                files = area.delivery_files(seen.path.parent, seen.manifest)
                with opened.store.transaction() as unit:
                    unit.land_batch(seen.manifest, files=files, ctx=_ctx(pipeline, seen.manifest), now=NOW)
            answers = _apply_writes(opened, plan)
            answers["tables"] = {t: table_rows(opened, t) for t in WRITTEN}
            found[kind] = answers
    duck, spark = found["duckdb"], found["spark"]
    assert {k: spark[k] for k in duck if k != "tables"} == {k: duck[k] for k in duck if k != "tables"}
    for table in WRITTEN:
        assert spark["tables"][table] == duck["tables"][table], table
    assert duck["history"] > 0 and duck["violations"] and duck["groups"] > 0  # the case is not empty


def _ctx(pipeline: Pipeline, manifest: Any) -> Any:
    from replay_assets.usecases.land import validation_context

    return validation_context(pipeline, manifest)
