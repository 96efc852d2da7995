"""The steps of applying a load date that stage the fold and write what it decided
(``storage/apply/steps.py``) give the same rows and answers on every engine: the same delivery
landed on both stores, then staged and written by each store's steps, every written table and
every returned value compared. Duplicates, a stale replay, a delete, a move to another store
and day, two batches, a customer and a conflicting event id are in the delivery."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.config import SloPolicy
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import CommitState, PartitionStatus
from replay_assets.storage.duckdb_adapter.apply_steps import DuckDBApplySteps
from replay_assets.storage.evidence import costs
from replay_assets.storage.landing import area
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.storage.rules import published as consumer
from replay_assets.storage.rules.journal import Operation
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide, plan_for
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.stores import SPARK_KINDS, open_store, table_rows

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

    return SparkApplySteps(unit.ops)


def _apply_writes(opened: Any, plan: Any) -> dict[str, Any]:
    with opened.store.transaction() as unit:
        steps = _steps(opened, unit)
        answers: dict[str, Any] = {
            "identity": steps.fold.applied_identity(DAY),
            "newest": steps.fold.newest_applied(),
            "holds": steps.writes.latest_holds_before(DAY),
        }
        steps.fold.stage_fold([b.batch_id for b in plan.batches], DAY)
        try:
            answers["counts"] = steps.fold.batch_counts(plan)
            answers["violations"] = steps.fold.violations(plan).rows()
            answers["dates"] = steps.writes.affected_groups()
            answers["history"] = steps.writes.write_history(DAY)
            steps.writes.register_events(DAY)
            answers["groups"] = steps.writes.queue_groups(answers["dates"], DAY, NOW)
            steps.writes.advance_watermarks(plan, DAY)
            steps.writes.write_reconciliation(plan, answers["counts"], "APPLIED")
            steps.fold.record_applied(DAY, plan.identity, NOW, "run-1")
        finally:
            steps.fold.drop_fold()
        answers["after"] = (steps.fold.applied_identity(DAY), steps.fold.newest_applied())
    return answers


@pytest.mark.parametrize("engine", SPARK_KINDS)
def test_the_fold_and_its_writes_are_the_same_on_every_engine(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    pipeline = Pipeline(settings_for(tmp_path / "plan-home", "2026-01-10T12:00:00Z"))
    landing = pipeline.settings.landing
    for batch, lines, hour in (("B1", FIRST, 1), ("B2", SECOND, 2)):
        write_delivery(landing, "erp", DAY, batch, lines, ready_at=f"{DAY}T0{hour}:00:00Z")
    plan = plan_for(decide(pipeline), DAY)
    found: dict[str, dict[str, Any]] = {}
    for kind in ("duckdb", engine):
        with open_store(request, kind, tmp_path / kind) as opened:
            for seen in area.scan(landing, pipeline.settings.limits):
                assert seen.manifest is not None
                files = area.delivery_files(seen.path.parent, seen.manifest)
                with opened.store.transaction() as unit:
                    unit.landing.land_batch(
                        seen.manifest, files=files, ctx=_ctx(pipeline, seen.manifest), now=NOW
                    )
            answers = _apply_writes(opened, plan)
            answers["tables"] = {t: table_rows(opened, t) for t in WRITTEN}
            found[kind] = answers
    duck, spark = found["duckdb"], found[engine]
    assert {k: spark[k] for k in duck if k != "tables"} == {k: duck[k] for k in duck if k != "tables"}
    for table in WRITTEN:
        assert spark["tables"][table] == duck["tables"][table], table
    assert duck["history"] > 0 and duck["violations"] and duck["groups"] > 0  # the case is not empty


def _ctx(pipeline: Pipeline, manifest: Any) -> Any:
    from replay_assets.usecases.land import validation_context

    return validation_context(pipeline, manifest)


APPLIED = (
    *WRITTEN,
    "batch_violations",
    "load_date_attempts",
    "order_latest",
    "customer_latest",
    "latest_changes",
    "snapshots",
    "state_digests",
    "publications",
    "pointers",
    "aggregate_versions",
    "candidates",
)


@pytest.mark.parametrize("engine", SPARK_KINDS)
def test_applying_load_dates_certifies_the_same_state_on_every_engine(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    """Load dates applied by the one procedure over each engine's steps, through every path: two
    dates applied (the second corrects, deletes and moves the first's orders), the second again
    (unchanged), a third blocked by a conflicting event id, then a late batch on the first date
    re-applying the chain (the second undone, the first and the second folded again). The same
    results (outcome, counts, controls, content hash, checks, target digest) and the same tables,
    history to publications, on both engines."""
    pipeline = Pipeline(settings_for(tmp_path / "plan-home", "2026-01-10T12:00:00Z"))
    d1, d2, d3 = "2026-01-02", "2026-01-03", "2026-01-04"
    clean = [line for line in SECOND if '"e5"' not in line and "e3-replay" not in line]
    deliver = pipeline.settings.landing, "erp"
    write_delivery(*deliver, d1, "B2", FIRST, ready_at=f"{d1}T01:00:00Z")
    write_delivery(*deliver, d2, "B3", clean, ready_at=f"{d2}T01:00:00Z")
    write_delivery(*deliver, d3, "B4", [_order(22, "o0", event_id="e5")], ready_at=f"{d3}T01:00:00Z")
    plans = {day: plan_for(decide(pipeline), day) for day in (d1, d2, d3)}
    write_delivery(*deliver, d1, "B2-late", [_order(40, "o9")], ready_at=f"{d1}T05:00:00Z")
    late = plan_for(decide(pipeline), d1)
    found: dict[str, Any] = {}
    for kind in ("duckdb", engine):
        with open_store(request, kind, tmp_path / kind) as opened:
            _land_all(opened, pipeline)
            records = []
            for day in (d1, d2, d2, d3):
                records += _applied(opened, plans[day], day)
            with opened.store.transaction() as unit:  # the backfill lane's chain, in one unit
                unit.apply.undo_load_date(d2, NOW)
                records += _recorded(unit, unit.apply.apply_load_date(late, **_AT, sealed_ok=True), d1)
                again = unit.apply.apply_load_date(plans[d2], **_AT, sealed_ok=True, restate=True)
                records += _recorded(unit, again, d2)
            dates = sorted({d for r in records[::2] for d in r["affected_business_dates"]})
            with opened.store.transaction() as unit:  # the restatement of every date they changed
                published = unit.publish.publish_aggregates(
                    tmp_path / kind, dates=dates, run_id="run-2", now=NOW
                )
                records += [p.to_record() for p in published]
                started = NOW - dt.timedelta(minutes=3)  # the run that applied: the SLOs' duration
                attempt = {"step": "apply", "attempt": 1, "outcome": "STARTED", "detail": "", "now": started}
                unit.evidence.record_step_attempt("run-1", partition_key="2026-01-02", **attempt)
                reason = "the source is not ready"
                unit.apply.record_attempt(
                    plans[d3], status=PartitionStatus.BLOCKED_UPSTREAM, reason=reason, now=NOW
                )
            records.append(_facts(opened, plans, late))
            records.append(_reports(opened, dates))
            if kind != "duckdb":
                _check_published_copy(opened, tmp_path / kind)
            records.append(_operated(opened, tmp_path / kind))
            records.append(_reports(opened, dates))
            found[kind] = {"records": records, "tables": {t: table_rows(opened, t) for t in OPERATED}}
    duck, spark = found["duckdb"], found[engine]
    statuses = [r["status"] for r in duck["records"][:12:2]]
    assert statuses == ["APPLIED", "APPLIED", "UNCHANGED", "BLOCKED", "RESTATED", "RESTATED"]
    assert [p["version"] for p in duck["records"][12:14]] == [1, 1]  # both business dates published
    assert spark["records"] == duck["records"]
    reports, operated = duck["records"][-3], duck["records"][-2]
    assert all(reports["exports"][t] for t in ("current_orders", "daily_aggregates", "reconciliation"))
    assert reports["slo"].duration_minutes == 3 and reports["slos"][0] and reports["totals"]
    assert [(v.checked > 0, v.mismatched) for v in reports["reverified"]] == [(True, [])] * 2
    assert (
        operated["pruned"][1]["history_rows"] > 0 and operated["behind"] == ErrorCode.BEHIND_HORIZON
    )  # the pruning removed superseded rows
    kept = {t: {(r[0], r[-1] < NOW) for r in duck["tables"][t]} for t in EVIDENCE}
    assert kept == {  # the evidence of work before the pruned dates were applied (NOW) went
        "operations": {("op-failed", True), ("op-new", False)},
        "operation_audit": {("op-failed", True), ("op-new", False)},
        "commit_markers": {("op-new", False), ("op-old", True)},
        "step_attempts": {("run-5", False), ("run-5", True)},
        "costs": {(None, False), ("run-3", False), ("run-5", False), ("run-5", True)},
    }
    for table in OPERATED:
        assert spark["tables"][table] == duck["tables"][table], table


EVIDENCE = ("operations", "operation_audit", "commit_markers", "step_attempts", "costs")  # retention bounds
OPERATED = (
    *APPLIED,
    *EVIDENCE,
    "reconciliation",
    "batch_resolutions",
    "batch_relandings",
    "backfills",
    "pruned_load_dates",
    "event_registry",
    "source_records",
)
POLICY = SloPolicy()
_AT = {"first_date": "2026-01-02", "run_id": "run-1", "now": NOW}


def _land_all(opened: Any, pipeline: Pipeline) -> None:
    for seen in area.scan(pipeline.settings.landing, pipeline.settings.limits):
        assert seen.manifest is not None
        files = area.delivery_files(seen.path.parent, seen.manifest)
        with opened.store.transaction() as unit:
            unit.landing.land_batch(seen.manifest, files=files, ctx=_ctx(pipeline, seen.manifest), now=NOW)


def _applied(opened: Any, plan: Any, day: str) -> list[Any]:
    with opened.store.transaction() as unit:
        return _recorded(unit, unit.apply.apply_load_date(plan, **_AT), day)


def _recorded(unit: Any, result: Any, day: str) -> list[Any]:
    from replay_assets.storage.apply.load_date import to_record

    return [to_record(result), unit.apply.target_digest(day, result.content_sha256 or "")]


def _facts(opened: Any, plans: dict[str, Any], late: Any) -> dict[str, Any]:
    """What a reader of the warehouse sees of its load dates, publications and horizon."""
    with opened.store.read() as unit:
        facts = unit.apply.warehouse_facts()
        found: dict[str, Any] = {
            "facts": (facts.applied, facts.blocked, facts.skipped, facts.landed, facts.pointer),
            "pruned_through": (facts.pruned_through, unit.retention.pruned_through()),
            "applied": unit.retention.applied_dates(),
            "pointer": unit.publish.certified_pointer(),
            "published": [
                unit.publish.published_partitions(a) for a in ("current_orders", "daily_aggregates")
            ],
            "versions": unit.publish.newest_versions("2026-01-01"),
            "operations": [unit.apply.apply_operation(plan) for plan in (*plans.values(), late)],
            "pruning": unit.retention.prune_operation("2026-01-02"),
            "publications": unit.publish.publications_digest(["2026-01-01", "2026-01-02", "2026-01-09"]),
        }
        unit.apply.require_landed(late)
        unlanded = dataclasses.replace(
            late, batches=(*late.batches, dataclasses.replace(late.batches[0], batch_id="B-none"))
        )
        with pytest.raises(ReplayError) as refused:
            unit.apply.require_landed(unlanded)
        found["refused"] = (refused.value.code, str(refused.value))
    return found


def _reports(opened: Any, dates: list[str]) -> dict[str, Any]:
    """What the use cases report from a reader's unit: exports, status, reconciliation, totals,
    service levels, the next publishing's identity and what it releases, re-verification."""
    with opened.store.read() as unit:
        recon = unit.reports.reconciliation_report()
        for row in recon:  # the statuses' order is the engine's
            row["statuses"] = sorted(str(row["statuses"]).split(","))
        return {
            "exports": {name: unit.reports.export_table(name, None).to_dicts() for name in consumer.TABLES},
            "as_of": unit.reports.export_table("current_orders", "2026-01-04").to_dicts(),
            "status": unit.reports.status_report(),
            "reconciliation": recon,
            "totals": unit.reports.daily_totals("2026-01-01", "2026-01-31"),
            "slo": unit.evidence.slo_for("2026-01-02", POLICY),
            "slos": [unit.evidence.daily_slos(POLICY), unit.evidence.daily_slos(POLICY, dates[:1])],
            "run_costs": unit.evidence.run_costs("run-3", "land"),
            "publishing": [unit.publish.publish_operation(dates), unit.publish.pending_groups()],
            "reverified": [unit.reports.reverify_state(), unit.reports.reverify_aggregates()],
        }


def _operated(opened: Any, home: Path) -> dict[str, Any]:
    """An operator's decisions and the horizon's pruning, in writers' units: a cost, a skip, a
    relanding, a backfill note, then the two applied load dates pruned."""
    found: dict[str, Any] = {}
    with opened.store.transaction() as unit:
        cost = costs.Cost(cpu_seconds=0.25, wall_seconds=0.5)
        unit.evidence.record_cost(
            run_id="run-3",
            step="land",
            partition_key="2026-01-02",
            cost=cost,
            now=NOW,
            batch_id="B2",
            events=8,
        )
        found["batch"] = [
            unit.landing.landed_batch("B4"),
            unit.landing.landed_batch("B-none"),
            unit.landing.schema_gated("B4"),
        ]
        found["violated"] = [
            unit.landing.violated_on("B4", "2026-01-04"),
            unit.landing.violated_on("B2", "2026-01-02"),
        ]
        unit.landing.record_skip("B3", note="not needed", operator="op", now=NOW)
        unit.landing.record_relanding(
            "B4", "2026-01-04", "sha", violations=0, note="fixed", operator="op", now=NOW
        )
        unit.evidence.record_backfill(
            "bf-1", asset="current_orders", first="a", last="b", note="n", operator="op", now=NOW
        )
        _evidence(unit)
    with opened.store.transaction() as unit:
        found["pruned"] = [
            unit.retention.prune_load_date(day, operation_id=f"op-{day}", keep=1, now=NOW)
            for day in ("2026-01-02", "2026-01-03")
        ]
        found["pruned_digest"] = [
            unit.retention.pruned_digest("2026-01-03"),
            unit.retention.pruned_digest("2026-01-04"),
        ]
    with opened.store.transaction() as unit:
        with pytest.raises(ReplayError) as refused:
            unit.reports.export_table("current_orders", "2026-01-03")
        found["behind"] = refused.value.code
    return found


def _evidence(unit: Any) -> None:
    """Evidence of work before the pruned dates were applied (NOW) and at that moment. The
    pruning removes a COMPLETE operation with its audit, a run's attempts and costs, a cost of no
    run, all older; it keeps an operation that failed before its commit (old), a COMPLETE one of
    NOW, a run with a row of NOW whole, every commit marker."""
    hour = NOW - dt.timedelta(hours=1)
    done = (S.PREPARED, S.COMMITTING, S.TARGET_COMMITTED, S.COMMITTED_INCOMPLETE, S.COMPLETE)
    for name, moves, at in (
        ("op-old", done, hour),
        ("op-failed", (S.FAILED_PRE_COMMIT,), hour),
        ("op-new", done, NOW),
    ):
        op = Operation(name, "intent", "publish_aggregates", "daily_aggregates", DAY, "inputs")
        entry = unit.journal.create_or_get_entry(op, "test", at)
        for state in moves:
            entry = unit.journal.cas_entry(entry, nxt=state, actor="test", note="", now=at)
        if moves is done:
            unit.journal.write_fence(op, at)
    for run, at in (("run-0", hour), ("run-5", hour), ("run-5", NOW)):
        attempt = {"step": "apply", "attempt": 1, "outcome": "STARTED", "detail": "", "now": at}
        unit.evidence.record_step_attempt(run, partition_key=DAY, **attempt)
    later = NOW + dt.timedelta(seconds=1)  # the status report orders costs by time, step, partition
    for key, at in ((None, hour), (None, NOW), ("run-0", hour), ("run-5", hour), ("run-5", later)):
        unit.evidence.record_cost(run_id=key, step="publish", partition_key=DAY, cost=costs.Cost(), now=at)


S = CommitState


def _check_published_copy(opened: Any, home: Path) -> None:
    """On Delta the published copy is a Delta table per consumer table, equal to its export (in
    no order: Delta keeps none), written again only when the warehouse moved. A writer's unit
    refreshes it, as ``usecases.recover.refresh_published`` does: a reader has no write."""
    with opened.store.transaction() as unit:
        written = unit.publish.refresh_published_copy(home)
        assert written == [f"published/{t}" for t in sorted(consumer.PUBLISHED)]
        assert unit.publish.refresh_published_copy(home) == []
        for table in consumer.PUBLISHED:
            copy = unit.ops.spark.read.format("delta").load(f"{opened.root}/published/{table}")
            exported = unit.reports.export_table(table, None).to_dicts()
            assert sorted(unit.ops.rows(copy), key=str) == sorted(exported, key=str), table
