"""Bad input through the storage pipeline (SPEC 2.1, 3.1-3.5): per-event rejections, batch-level
contract violations that block a load date, deliveries that are not ready, missing and late load
dates, batch-id reuse, idempotent re-delivery, stale replays and tombstones.

Everything runs through :class:`Pipeline` and :func:`drive` on a real DuckDB file in tmp_path and
is asserted through the warehouse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ErrorCode, RejectReason, ReplayError, Violation
from replay_assets.core.status import DateStatus
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.resolve import resolve
from replay_assets.usecases.status import record_waiting_statuses
from replay_assets_tests.helpers import drive, settings_for

NOW = "2026-01-10T12:00:00Z"  # business dates up to 2026-01-11 are in range (tolerance 1 day)
SOURCE = "erp"
D1, D2, D3 = "2026-01-01", "2026-01-02", "2026-01-03"


# --------------------------------------------------------------------------- helpers


def event(
    seq: int,
    order_id: str = "o1",
    line_no: int = 1,
    *,
    version: int | None = None,
    op: str = "upsert",
    event_id: str | None = None,
    schema_version: int = 1,
    extra: dict[str, Any] | None = None,
    extra_image: dict[str, Any] | None = None,
    **image: Any,
) -> str:
    """One native order-line change event as a JSON line."""
    after: dict[str, Any] = {
        "order_id": order_id,
        "line_no": line_no,
        "store_id": "s1",
        "customer_id": "c1",
        "product_id": "p1",
        "business_date": "2026-01-01",
        "quantity": 1,
        "amount_minor": 100,
        "cost_minor": 50,
        "status": "active",
    }
    after.update(image)
    after.update(extra_image or {})
    body: dict[str, Any] = {
        "event_id": event_id or f"e{seq}",
        "source_seq": seq,
        "schema_version": schema_version,
        "entity": "order_line",
        "op": op,
        "key": {"order_id": order_id, "line_no": line_no},
        "version": seq if version is None else version,
        "event_time": "2026-01-01T00:00:00Z",
        "after": after if op == "upsert" else None,
    }
    body.update(extra or {})
    return json.dumps(body)


def make_pipeline(home: Path, now: str = NOW) -> Pipeline:
    return Pipeline(settings_for(home, now))


def deliver(
    p: Pipeline,
    day: str,
    batch_id: str,
    lines: Sequence[str],
    *,
    ready_at: str | None = None,
    seq_range: tuple[int, int] | None = None,
    supersedes: Sequence[str] = (),
) -> Path:
    return write_delivery(
        p.settings.landing,
        SOURCE,
        day,
        batch_id,
        list(lines),
        ready_at or f"{day}T06:00:00Z",
        seq_range,
        supersedes,
    )


def rows(p: Pipeline, sql: str, params: list[object] | None = None) -> list[tuple[Any, ...]]:
    with p.warehouse.connect() as con:
        return con.execute(sql, params or []).fetchall()


def statuses(p: Pipeline) -> dict[str, tuple[DateStatus, str]]:
    return {plan.load_date: (plan.status, plan.reason) for plan in decide(p).plans}


def consumer_orders(p: Pipeline) -> dict[str, tuple[int, str, int | None]]:
    """current_orders (as of the published load date): order_id -> (version, status, amount)."""
    got = rows(p, "SELECT order_id, version, status, amount_minor FROM current_orders ORDER BY 1")
    return {r[0]: (r[1], r[2], r[3]) for r in got}


def state_as_of(p: Pipeline, day: str) -> dict[str, tuple[int, str, int | None]]:
    got = rows(p, "SELECT order_id, version, status, amount_minor FROM orders_as_of(?) ORDER BY 1", [day])
    return {r[0]: (r[1], r[2], r[3]) for r in got}


FACTS = {
    "load_dates": "SELECT load_date, identity FROM load_dates ORDER BY 1",
    "order_history": "SELECT * FROM order_history ORDER BY order_id, line_no, load_date",
    "event_registry": "SELECT * FROM event_registry ORDER BY source, event_id",
    "snapshots": "SELECT * FROM snapshots ORDER BY load_date",
    "pointer": "SELECT value FROM pointers WHERE name = 'published_load_date'",
    "watermarks": "SELECT * FROM watermarks ORDER BY source",
    "publications": "SELECT asset, partition_key, version, as_of_load_date, content_sha256 "
    "FROM publications ORDER BY asset, partition_key, version",
    "aggregates": "SELECT * EXCLUDE (certified_at) FROM daily_aggregates ORDER BY store_id, business_date",
    "queue": "SELECT business_date, store_id, load_date FROM restatement_queue ORDER BY ALL",
}


def facts(p: Pipeline) -> dict[str, list[tuple[Any, ...]]]:
    """Everything an application or a publication would change (timestamps excluded)."""
    with p.warehouse.connect() as con:
        return {name: con.execute(sql).fetchall() for name, sql in FACTS.items()}


def reconciliation(p: Pipeline) -> dict[str, tuple[Any, ...]]:
    got = rows(
        p,
        "SELECT batch_id, load_date, source_events, accepted, rejected, skipped_duplicate, "
        "skipped_stale, status FROM reconciliation ORDER BY batch_id",
    )
    return {r[0]: tuple(r[1:]) for r in got}


def assert_reconciliation_adds_up(p: Pipeline) -> None:
    for batch_id, (_, source_events, acc, rej, dup, stale, status) in reconciliation(p).items():
        if status == "APPLIED":
            assert source_events == acc + rej + dup + stale, batch_id


def partition_status(p: Pipeline, day: str) -> tuple[str, str]:
    got = rows(
        p,
        "SELECT status, reason FROM partition_status WHERE asset = 'current_orders' AND partition_key = ?",
        [day],
    )
    assert len(got) == 1, got
    return got[0][0], got[0][1]


# --------------------------------------------------------------------------- per-event rejections


def test_per_event_failures_are_rejected_with_line_and_reason_and_the_rest_applies(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    lines = [
        event(1, "o1"),  # 1 ok
        '{"event_id": "e2", "source_seq": 2,',  # 2 malformed JSON
        event(3, "o3", extra={"coupon": "X"}),  # 3 unknown envelope field
        event(4, "o4", business_date="2026-01-12"),  # 4 after today + 1 day
        event(5, "o5", business_date="2019-12-31"),  # 5 before the business-date start
        event(25, "o6"),  # 6 outside the declared slice 1..20
        "",  # 7 blank: not an event, but it keeps the numbering
        event(8, "o8", business_date="2026-01-11"),  # 8 ok: today + tolerance is in range
        event(9, "o9", extra_image={"discount": 1}),  # 9 unknown image field
        event(1, "o1"),  # 10 the first line again: a duplicate
    ]
    deliver(p, D1, "B1", lines, seq_range=(1, 20))

    assert drive(p) == [
        f"apply {D1}: APPLIED",
        "publish 2026-01-01..2026-01-01",
        "publish 2026-01-11..2026-01-11",
    ]

    rejected = rows(
        p,
        "SELECT batch_id, load_date, source_file, line_number, event_id, reason_code "
        "FROM rejected_events ORDER BY line_number",
    )
    assert rejected == [
        ("B1", D1, "B1.jsonl", 2, None, RejectReason.MALFORMED_JSON.value),
        ("B1", D1, "B1.jsonl", 3, "e3", RejectReason.UNKNOWN_FIELD.value),
        ("B1", D1, "B1.jsonl", 4, "e4", RejectReason.BUSINESS_DATE_OUT_OF_RANGE.value),
        ("B1", D1, "B1.jsonl", 5, "e5", RejectReason.BUSINESS_DATE_OUT_OF_RANGE.value),
        ("B1", D1, "B1.jsonl", 6, "e25", RejectReason.OUTSIDE_DECLARED_SLICE.value),
        ("B1", D1, "B1.jsonl", 9, "e9", RejectReason.UNKNOWN_FIELD.value),
    ]
    details = dict(rows(p, "SELECT line_number, detail FROM rejected_events"))
    assert "coupon" in details[3] and "discount" in details[9]

    # the valid events applied; the rejected ones never reach state
    assert consumer_orders(p) == {"o1": (1, "active", 100), "o8": (8, "active", 100)}
    assert rows(p, "SELECT load_date FROM load_dates") == [(D1,)]
    # a rejected business date never reaches a partition key
    assert rows(p, "SELECT DISTINCT business_date FROM restatement_queue ORDER BY 1") == [
        ("2026-01-01",),
        ("2026-01-11",),
    ]
    # evidence: every non-blank line is a raw receipt with its own line number
    assert [r[0] for r in rows(p, "SELECT line_number FROM raw_receipts ORDER BY 1")] == [
        1,
        2,
        3,
        4,
        5,
        6,
        8,
        9,
        10,
    ]
    # 9 events = 2 accepted + 6 rejected + 1 duplicate + 0 stale
    assert reconciliation(p) == {"B1": (D1, 9, 2, 6, 1, 0, "APPLIED")}
    assert_reconciliation_adds_up(p)
    # the watermark is the declared high of the slice
    assert rows(p, "SELECT source, watermark FROM watermarks") == [(SOURCE, 20)]


def test_reconciliation_adds_up_per_batch_across_batches_and_days(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1a", [event(1, "o1"), event(2, "o2"), "nope"], ready_at=f"{D1}T06:00:00Z")
    # a second batch the same day: e1 again (duplicate), o2 superseded within the day (accepted)
    deliver(p, D1, "B1b", [event(1, "o1"), event(3, "o2", version=3)], ready_at=f"{D1}T07:00:00Z")
    deliver(p, D2, "B2", [event(4, "o1", version=0), event(2, "o2"), event(5, "o5"), "[1]"])
    drive(p)
    assert reconciliation(p) == {
        "B1a": (D1, 3, 2, 1, 0, 0, "APPLIED"),
        "B1b": (D1, 2, 1, 0, 1, 0, "APPLIED"),
        "B2": (D2, 4, 1, 1, 1, 1, "APPLIED"),
    }
    assert_reconciliation_adds_up(p)
    # per load date the figures are sums of the batches
    per_day = rows(
        p,
        "SELECT load_date, sum(source_events), sum(accepted + rejected + skipped_duplicate + "
        "skipped_stale) FROM reconciliation GROUP BY 1 ORDER BY 1",
    )
    assert per_day == [(D1, 5, 5), (D2, 4, 4)]
    assert consumer_orders(p) == {
        "o1": (1, "active", 100),
        "o2": (3, "active", 100),
        "o5": (5, "active", 100),
    }


# --------------------------------------------------------------------------- batch-level violations

VIOLATIONS = {
    # the same event_id as D1's e1, with other content, on a later load date
    "event_id_across_load_dates": (
        [event(4, "o1", event_id="e1", amount_minor=999)],
        Violation.EVENT_ID_CONFLICT,
        "e1",
    ),
    # the same event_id twice in the load date, with other content
    "event_id_within_load_date": (
        [event(5, "o5"), event(6, "o6", event_id="e5")],
        Violation.EVENT_ID_CONFLICT,
        "e5",
    ),
    # source_seq 2 was committed on D1 (e2); here it carries another event
    "source_seq": ([event(2, "o7", event_id="e77")], Violation.SOURCE_SEQ_CONFLICT, "e77"),
    # o1 is committed at version 1; an equal version with another image
    "equal_version_vs_committed": (
        [event(5, "o1", version=1, amount_minor=999)],
        Violation.EQUAL_VERSION_CONFLICT,
        "e5",
    ),
    # two events of the load date with the same key and version, different images
    "equal_version_within_load_date": (
        [event(5, "o6", version=7), event(6, "o6", version=7, amount_minor=1)],
        Violation.EQUAL_VERSION_CONFLICT,
        "e6",
    ),
    "schema_version_2": ([event(5, "o8", schema_version=2)], Violation.UNSUPPORTED_SCHEMA_VERSION, "e5"),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_batch_violation_blocks_the_load_date_until_resolved(tmp_path: Path, case: str) -> None:
    bad_lines, rule, bad_event = VIOLATIONS[case]
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1"), event(2, "o2")])
    drive(p)
    before = facts(p)
    assert before["pointer"] == [(D1,)]

    # D2: a good event, then the violation; the declared slice would move the watermark to 9
    deliver(p, D2, "B2", [event(3, "o3"), *bad_lines], seq_range=(1, 9))
    deliver(p, D3, "B3", [event(10, "o4")])

    with pytest.raises(ReplayError) as blocked:
        drive(p)
    assert blocked.value.code is ErrorCode.BATCH_BLOCKED
    message = str(blocked.value)
    if rule is Violation.UNSUPPORTED_SCHEMA_VERSION:  # named by its source_seq and line
        assert "schema_version" in message and "source_seq=5" in message and "B2.jsonl line 2" in message
    else:
        assert rule.value in message and f"event {bad_event}" in message

    # nothing of D2 applied: no load date row, snapshot, pointer, watermark, history unchanged
    assert facts(p) == before
    assert "o3" not in state_as_of(p, "9999-12-31")
    # D2 is BLOCKED, with the event and the rule; D3 waits behind it
    status = statuses(p)
    assert status[D2][0] is DateStatus.BLOCKED
    assert "B2" in status[D2][1]
    if rule is Violation.UNSUPPORTED_SCHEMA_VERSION:
        assert "schema_version" in status[D2][1]
    else:
        assert rule.value in status[D2][1] and bad_event in status[D2][1]
    assert status[D3][0] is DateStatus.DELAYED
    assert decide(p).next is None
    got_status, reason = partition_status(p, D2)
    assert got_status == "BLOCKED" and reason == status[D2][1]
    violations = rows(p, "SELECT batch_id, load_date, event_id, rule, source_file FROM batch_violations")
    assert ("B2", D2, bad_event, rule.value, "B2.jsonl") in violations
    assert {v[0] for v in violations} == {"B2"}
    # a blocked batch records its source_events and status BLOCKED only
    assert reconciliation(p)["B2"] == (D2, 1 + len(bad_lines), 0, 0, 0, 0, "BLOCKED")
    # asking again does not apply it either
    with pytest.raises(ReplayError):
        apply(p, D2, None)
    assert facts(p) == before

    # the operator skips the batch (audited); D2 and D3 apply, nothing of B2 does
    resolve(p, "B2", "upstream re-sends next week", "alice")
    assert rows(p, "SELECT batch_id, action, note, operator FROM batch_resolutions") == [
        ("B2", "skip", "upstream re-sends next week", "alice")
    ]
    done = drive(p)
    assert done[:2] == [f"apply {D2}: APPLIED", f"apply {D3}: APPLIED"]
    assert rows(p, "SELECT load_date FROM load_dates ORDER BY 1") == [(D1,), (D2,), (D3,)]
    assert consumer_orders(p) == {
        "o1": (1, "active", 100),
        "o2": (2, "active", 100),
        "o4": (10, "active", 100),
    }
    assert reconciliation(p)["B2"][-1] == "SKIPPED"
    assert reconciliation(p)["B3"] == (D3, 1, 1, 0, 0, 0, "APPLIED")
    assert rows(p, "SELECT watermark FROM watermarks") == [(10,)]


def test_a_corrected_batch_under_a_new_batch_id_unblocks_the_load_date(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    drive(p)
    deliver(p, D2, "B2", [event(2, "o2"), event(3, "o1", version=1, amount_minor=5)])
    with pytest.raises(ReplayError):
        drive(p)
    assert statuses(p)[D2][0] is DateStatus.BLOCKED

    deliver(p, D2, "B2-FIX", [event(2, "o2"), event(3, "o1", version=3, amount_minor=5)], supersedes=["B2"])
    assert statuses(p)[D2][0] is DateStatus.READY
    assert drive(p)[0] == f"apply {D2}: APPLIED"
    assert consumer_orders(p) == {"o1": (3, "active", 5), "o2": (2, "active", 100)}
    assert reconciliation(p)["B2-FIX"] == (D2, 2, 2, 0, 0, 0, "APPLIED")


def _blocked_restatement(p: Pipeline) -> dict[str, list[tuple[Any, ...]]]:
    """D1 applied and latest; a new D1 batch with an equal-version conflict; D2 delivered."""
    deliver(p, D1, "B1", [event(1, "o1")])
    drive(p)
    before = facts(p)
    deliver(p, D1, "B1-BAD", [event(2, "o1", version=1, amount_minor=5)], ready_at=f"{D1}T09:00:00Z")
    deliver(p, D2, "B2", [event(3, "o2")])
    with pytest.raises(ReplayError) as blocked:
        drive(p)
    assert blocked.value.code is ErrorCode.BATCH_BLOCKED
    assert "EQUAL_VERSION_CONFLICT at event e2" in str(blocked.value)
    return before


def test_a_blocked_restatement_of_the_latest_date_applies_nothing(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    before = _blocked_restatement(p)
    assert facts(p) == before
    assert consumer_orders(p) == {"o1": (1, "active", 100)}
    assert partition_status(p, D1)[0] == "BLOCKED"
    assert reconciliation(p)["B1-BAD"] == (D1, 1, 0, 0, 0, 0, "BLOCKED")
    # the operator skips it: D1 is as applied before, and D2 applies
    resolve(p, "B1-BAD", "bad correction", "alice")
    assert drive(p)[0] == f"apply {D2}: APPLIED"
    assert consumer_orders(p) == {"o1": (1, "active", 100), "o2": (3, "active", 100)}


def test_a_blocked_restatement_is_reported_blocked_and_later_dates_delayed(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    _blocked_restatement(p)
    status = statuses(p)
    assert status[D1][0] is DateStatus.BLOCKED
    assert status[D2][0] is DateStatus.DELAYED
    assert decide(p).next is None


# --------------------------------------------------------------------------- not ready


def _corrupt_same_size(path: Path) -> bytes:
    good = path.read_bytes()
    bad = good.replace(b'"amount_minor": 100', b'"amount_minor": 900')
    assert bad != good and len(bad) == len(good)
    path.write_bytes(bad)
    return good


def test_sha256_mismatch_is_blocked_upstream_naming_the_file_and_lands_nothing(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    _corrupt_same_size(p.settings.landing / SOURCE / D1 / "B1.jsonl")

    # the cheap check (present, size) passes: the date looks ready until landing verifies it
    assert decide(p).next is not None
    with pytest.raises(ReplayError) as not_ready:
        land(p, D1)
    assert not_ready.value.code is ErrorCode.NOT_READY
    assert "B1.jsonl" in str(not_ready.value) and "sha256" in str(not_ready.value)

    status, reason = statuses(p)[D1]
    assert status is DateStatus.BLOCKED_UPSTREAM and "B1.jsonl" in reason
    assert decide(p).next is None
    assert partition_status(p, D1)[0] == "BLOCKED_UPSTREAM"
    for table in ("manifests", "raw_receipts", "staged_events", "rejected_events", "load_dates"):
        assert rows(p, f"SELECT count(*) FROM {table}") == [(0,)], table
    assert drive(p) == []
    assert facts(p)["publications"] == []


def test_a_corrected_file_makes_the_date_ready_again(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    data = p.settings.landing / SOURCE / D1 / "B1.jsonl"
    good = _corrupt_same_size(data)
    with pytest.raises(ReplayError):
        land(p, D1)
    data.write_bytes(good)  # the source re-copies the file its manifest describes
    assert statuses(p)[D1][0] is DateStatus.READY
    assert drive(p)[0] == f"apply {D1}: APPLIED"


def test_missing_data_file_is_blocked_upstream_naming_the_file(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    deliver(p, D2, "B2", [event(2, "o2")])
    (p.settings.landing / SOURCE / D2 / "B2.jsonl").unlink()
    drive(p)
    status = statuses(p)
    assert status[D1][0] is DateStatus.APPLIED
    assert status[D2][0] is DateStatus.BLOCKED_UPSTREAM and "B2.jsonl" in status[D2][1]
    with pytest.raises(ReplayError) as not_ready:
        land(p, D2)
    assert not_ready.value.code is ErrorCode.NOT_READY
    assert rows(p, "SELECT batch_id FROM manifests") == [("B1",)]


def test_ready_at_in_the_future_is_blocked_upstream_until_it_passes(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    deliver(p, D2, "B2", [event(2, "o2")], ready_at="2026-01-10T12:00:01Z")  # one second after NOW
    deliver(p, D3, "B3", [event(3, "o3")])
    assert drive(p) == [f"apply {D1}: APPLIED", "publish 2026-01-01..2026-01-01"]

    decision = decide(p)
    plans = {plan.load_date: plan for plan in decision.plans}
    assert plans[D2].status is DateStatus.BLOCKED_UPSTREAM
    assert "ready_at" in plans[D2].reason and "B2" in plans[D2].reason
    assert plans[D3].status is DateStatus.DELAYED
    assert decision.next is None
    with pytest.raises(ReplayError) as not_ready:
        land(p, D2)
    assert not_ready.value.code is ErrorCode.NOT_READY
    assert rows(p, "SELECT batch_id FROM manifests") == [("B1",)]
    assert consumer_orders(p) == {"o1": (1, "active", 100)}

    later = make_pipeline(tmp_path, "2026-01-10T12:00:01Z")
    assert drive(later)[:2] == [f"apply {D2}: APPLIED", f"apply {D3}: APPLIED"]
    assert set(consumer_orders(later)) == {"o1", "o2", "o3"}


# --------------------------------------------------------------------------- batch-id reuse


def test_same_batch_id_with_other_content_after_landing_fails_closed(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    landed = land(p, D1)
    assert [(x.batch_id, x.new) for x in landed] == [("B1", True)]

    deliver(p, D1, "B1", [event(1, "o1"), event(2, "o2")])  # overwrites the manifest and the file
    status, reason = statuses(p)[D1]
    assert status is DateStatus.BLOCKED
    assert "REPLAY_BATCH_ID_REUSED" in reason and "B1" in reason
    assert decide(p).next is None
    assert drive(p) == []
    with pytest.raises(ReplayError) as refused:
        apply(p, D1, None)
    assert "REPLAY_BATCH_ID_REUSED" in str(refused.value)

    record_waiting_statuses(p)
    got_status, got_reason = partition_status(p, D1)
    assert got_status == "BLOCKED" and "REPLAY_BATCH_ID_REUSED" in got_reason
    # nothing from it applied; the raw evidence is the first landing's, untouched
    assert rows(p, "SELECT count(*) FROM load_dates") == [(0,)]
    assert rows(p, "SELECT count(*) FROM order_history") == [(0,)]
    assert rows(p, "SELECT batch_id, line_number FROM raw_receipts") == [("B1", 1)]


def test_same_batch_id_with_other_content_on_an_applied_date_applies_nothing(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    drive(p)
    before = facts(p)
    deliver(p, D1, "B1", [event(1, "o1"), event(2, "o2", amount_minor=7)])
    assert drive(p) == []
    assert facts(p) == before
    assert consumer_orders(p) == {"o1": (1, "active", 100)}


def test_same_batch_id_with_other_content_on_an_applied_date_is_reported(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    drive(p)
    deliver(p, D1, "B1", [event(1, "o1"), event(2, "o2", amount_minor=7)])
    assert "REPLAY_BATCH_ID_REUSED" in statuses(p)[D1][1]


# --------------------------------------------------------------------------- missing and late dates


def test_missing_load_date_delays_later_dates_and_consumers_keep_the_last_certified(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    deliver(p, D3, "B3", [event(3, "o3"), event(4, "o1", version=4, amount_minor=400)])
    assert drive(p) == [f"apply {D1}: APPLIED", "publish 2026-01-01..2026-01-01"]

    decision = record_waiting_statuses(p)
    status = {plan.load_date: plan for plan in decision.plans}
    assert status[D2].status is DateStatus.MISSING and SOURCE in status[D2].reason
    assert status[D3].status is DateStatus.DELAYED
    assert decision.next is None
    assert partition_status(p, D2)[0] == "MISSING"
    assert partition_status(p, D3)[0] == "DELAYED"
    with pytest.raises(ReplayError):
        apply(p, D3, None)
    # consumers keep D1
    assert rows(p, "SELECT value FROM pointers") == [(D1,)]
    assert consumer_orders(p) == {"o1": (1, "active", 100)}
    assert rows(p, "SELECT amount_minor, CAST(as_of_load_date AS VARCHAR) FROM daily_aggregates") == [
        (100, D1)
    ]

    # the gap is filled: the dates apply in order
    deliver(p, D2, "B2", [event(2, "o2")])
    assert drive(p)[:2] == [f"apply {D2}: APPLIED", f"apply {D3}: APPLIED"]
    assert rows(p, "SELECT value FROM pointers") == [(D3,)]
    assert consumer_orders(p) == {
        "o1": (4, "active", 400),
        "o2": (2, "active", 100),
        "o3": (3, "active", 100),
    }
    assert rows(p, "SELECT amount_minor, CAST(as_of_load_date AS VARCHAR) FROM daily_aggregates") == [
        (600, D3)
    ]


def test_late_delivery_for_a_sealed_date_changes_nothing(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    deliver(p, D2, "B2", [event(2, "o2")])
    drive(p)
    before = facts(p)

    deliver(p, D1, "B1-LATE", [event(3, "o1", version=3, amount_minor=300)], ready_at=f"{D1}T23:00:00Z")
    status, reason = statuses(p)[D1]
    assert status is DateStatus.LATE_DELIVERY and "REPLAY_LOAD_DATE_SEALED" in reason
    assert decide(p).next is None
    assert drive(p) == []
    with pytest.raises(ReplayError):
        apply(p, D1, None)
    with pytest.raises(ReplayError):
        land(p, D1)
    assert facts(p) == before
    assert consumer_orders(p) == {"o1": (1, "active", 100), "o2": (2, "active", 100)}
    record_waiting_statuses(p)
    assert partition_status(p, D1)[0] == "LATE_DELIVERY"


def test_new_batch_for_the_latest_applied_date_restates_it(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    deliver(p, D2, "B2", [event(2, "o2")])
    drive(p)
    first = rows(p, "SELECT content_sha256 FROM snapshots WHERE load_date = ?", [D2])

    deliver(p, D2, "B2-MORE", [event(3, "o2", version=3, amount_minor=700)], ready_at=f"{D2}T09:00:00Z")
    assert statuses(p)[D2][0] is DateStatus.RESTATE
    assert drive(p)[0] == f"apply {D2}: RESTATED"

    assert consumer_orders(p) == {"o1": (1, "active", 100), "o2": (3, "active", 700)}
    snapshot = rows(p, "SELECT content_sha256, amount_minor FROM snapshots WHERE load_date = ?", [D2])
    assert snapshot[0][0] != first[0][0] and snapshot[0][1] == 800
    pubs = rows(
        p,
        "SELECT version, content_sha256, reason FROM publications "
        "WHERE asset = 'current_orders' AND partition_key = ? ORDER BY version",
        [D2],
    )
    assert [v for v, _, _ in pubs] == [1, 2]  # version 1 stays queryable
    assert pubs[0][1] == first[0][0] and pubs[1][1] == snapshot[0][0]
    assert partition_status(p, D2)[0] == "RESTATED"
    assert reconciliation(p)["B2-MORE"] == (D2, 1, 1, 0, 0, 0, "APPLIED")
    assert rows(p, "SELECT amount_minor, publication_version FROM daily_aggregates") == [(800, 2)]

    # a new batch that changes no content restates the date but publishes nothing new
    before = facts(p)
    deliver(p, D2, "B2-DUP", [event(3, "o2", version=3, amount_minor=700)], ready_at=f"{D2}T10:00:00Z")
    assert drive(p)[0] == f"apply {D2}: RESTATED"
    after = facts(p)
    assert after["publications"] == before["publications"]
    assert after["snapshots"] == before["snapshots"]
    assert after["aggregates"] == before["aggregates"]
    assert reconciliation(p)["B2-DUP"] == (D2, 1, 0, 0, 1, 0, "APPLIED")


def test_superseding_the_batch_of_the_latest_date_removes_its_changes(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(1, "o1")])
    # B2 moves o1 to store s9 and adds o2 on another business date and store
    moved = event(3, "o1", version=3, store_id="s9")
    deliver(p, D2, "B2", [event(2, "o2", business_date="2026-01-02", store_id="s2"), moved])
    drive(p)
    groups = "SELECT store_id, CAST(business_date AS VARCHAR), amount_minor FROM daily_aggregates ORDER BY 1"
    assert rows(p, groups) == [("s2", "2026-01-02", 100), ("s9", "2026-01-01", 100)]

    deliver(p, D2, "B2-FIX", [event(4, "o3")], ready_at=f"{D2}T09:00:00Z", supersedes=["B2"])
    assert drive(p)[0] == f"apply {D2}: RESTATED"
    # D2 is folded again whole without B2: o1 back in s1, o2 gone, both old groups repaired
    assert consumer_orders(p) == {"o1": (1, "active", 100), "o3": (4, "active", 100)}
    assert rows(p, "SELECT store_id FROM current_orders WHERE order_id = 'o1'") == [("s1",)]
    assert rows(p, groups) == [("s1", "2026-01-01", 200)]
    assert rows(p, "SELECT event_id FROM event_registry ORDER BY 1") == [("e1",), ("e4",)]


def test_redelivering_the_identical_manifest_is_a_no_op(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    lines = [event(1, "o1"), event(2, "o2", op="delete")]
    deliver(p, D1, "B1", lines)
    deliver(p, D2, "B2", [event(3, "o3")])
    drive(p)
    before = facts(p)
    recon = reconciliation(p)
    receipts = rows(p, "SELECT count(*) FROM raw_receipts")

    deliver(p, D1, "B1", lines)
    deliver(p, D2, "B2", [event(3, "o3")])
    assert all(status is DateStatus.APPLIED for status, _ in statuses(p).values())
    assert drive(p) == []
    # landing and applying again by hand are no-ops too
    assert [x.new for x in land(p, D2)] == [False]
    assert apply(p, D2, None).status == "APPLIED"  # the journal's recorded result: nothing mutated again
    assert facts(p) == before
    assert reconciliation(p) == recon
    assert rows(p, "SELECT count(*) FROM raw_receipts") == receipts


# --------------------------------------------------------------------------- stale replays, tombstones


def test_stale_replay_is_skipped_and_never_overwrites(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(10, "o1", version=2, amount_minor=200)])
    deliver(p, D2, "B2", [event(11, "o1", version=1, amount_minor=1)])
    drive(p)
    assert reconciliation(p)["B2"] == (D2, 1, 0, 0, 0, 1, "APPLIED")
    assert consumer_orders(p) == {"o1": (2, "active", 200)}
    assert rows(p, "SELECT version FROM order_history") == [(2,)]


def test_stale_upsert_never_resurrects_a_tombstone_and_a_higher_version_restores(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path)
    deliver(p, D1, "B1", [event(10, "o1", version=2, amount_minor=200)])
    deliver(p, D2, "B2", [event(12, "o1", version=3, op="delete")])
    deliver(p, D3, "B3", [event(13, "o1", version=2, amount_minor=2), event(14, "o1", version=1)])
    drive(p)
    assert reconciliation(p)["B3"] == (D3, 2, 0, 0, 0, 2, "APPLIED")
    # the tombstone stays, with its version and null business fields
    tomb = rows(
        p,
        "SELECT status, version, store_id, business_date, amount_minor, CAST(load_date AS VARCHAR) "
        "FROM current_orders",
    )
    assert tomb == [("deleted", 3, None, None, None, D2)]
    assert rows(p, "SELECT count(*) FROM daily_aggregates") == [(0,)]
    assert_reconciliation_adds_up(p)

    d4 = "2026-01-04"
    deliver(p, d4, "B4", [event(15, "o1", version=4, amount_minor=500)])
    drive(p)
    assert consumer_orders(p) == {"o1": (4, "active", 500)}
    assert state_as_of(p, D3) == {"o1": (3, "deleted", None)}  # history keeps the tombstone
    assert rows(p, "SELECT store_id, amount_minor FROM daily_aggregates") == [("s1", 500)]
