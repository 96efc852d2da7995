"""Which load date applies next, and why the others wait (SPEC 2.1)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.plan import (
    DatePlan,
    DateStatus,
    Delivery,
    WarehouseFacts,
    input_identity,
    next_to_apply,
    plan_load_dates,
)

WINDOW = ("2026-01-01", "2026-12-31")
D1, D2, D3, D4 = "2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"
NO_FACTS = WarehouseFacts()


def dl(
    batch_id: str,
    load_date: str,
    source: str = "erp",
    sha: str | None = None,
    ready_at: str | None = None,
    not_ready: str | None = None,
    supersedes: tuple[str, ...] = (),
) -> Delivery:
    return Delivery(
        source,
        batch_id,
        load_date,
        sha or f"sha-{batch_id}",
        ready_at or f"{load_date}T06:00:00+00:00",
        not_ready,
        supersedes,
    )


def by_date(plans: list[DatePlan]) -> dict[str, DatePlan]:
    return {p.load_date: p for p in plans}


def statuses(plans: list[DatePlan]) -> dict[str, DateStatus]:
    return {p.load_date: p.status for p in plans}


def applied(*pairs: tuple[str, list[Delivery]]) -> dict[str, str]:
    return {day: input_identity(batches) for day, batches in pairs}


def test_ready_dates_apply_oldest_first() -> None:
    b1, b2 = dl("B1", D1), dl("B2", D2)
    plans = plan_load_dates([b2, b1], NO_FACTS, WINDOW)
    assert statuses(plans) == {D1: DateStatus.READY, D2: DateStatus.READY}
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D1
    assert nxt.batches == (b1,)
    assert nxt.identity == input_identity([b1])


def test_batches_of_a_date_are_ordered_by_ready_at_then_batch_id() -> None:
    late = dl("A-late", D1, ready_at="2026-01-01T09:00:00+00:00")
    early_b = dl("B-early", D1, ready_at="2026-01-01T07:00:00+00:00")
    early_a = dl("A-early", D1, ready_at="2026-01-01T07:00:00+00:00", source="crm")
    plan = by_date(plan_load_dates([late, early_b, early_a], NO_FACTS, WINDOW))[D1]
    assert plan.status is DateStatus.READY
    assert [b.batch_id for b in plan.batches] == ["A-early", "B-early", "A-late"]


def test_next_after_applied_date() -> None:
    b1, b2 = dl("B1", D1), dl("B2", D2)
    plans = plan_load_dates([b1, b2], WarehouseFacts(applied=applied((D1, [b1]))), WINDOW)
    assert statuses(plans) == {D1: DateStatus.APPLIED, D2: DateStatus.READY}
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D2


def test_everything_applied_means_nothing_to_do() -> None:
    b1, b2 = dl("B1", D1), dl("B2", D2)
    facts = WarehouseFacts(applied=applied((D1, [b1]), (D2, [b2])))
    plans = plan_load_dates([b1, b2], facts, WINDOW)
    assert statuses(plans) == {D1: DateStatus.APPLIED, D2: DateStatus.APPLIED}
    assert next_to_apply(plans) is None


def test_never_d_before_d_minus_1_a_gap_is_missing_and_later_dates_are_delayed() -> None:
    plans = plan_load_dates([dl("B1", D1), dl("B3", D3), dl("B4", D4)], NO_FACTS, WINDOW)
    assert statuses(plans) == {
        D1: DateStatus.READY,
        D2: DateStatus.MISSING,
        D3: DateStatus.DELAYED,
        D4: DateStatus.DELAYED,
    }
    assert "erp" in by_date(plans)[D2].reason
    assert D2 in by_date(plans)[D3].reason
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D1


def test_nothing_applies_while_the_gap_is_open() -> None:
    b1, b3 = dl("B1", D1), dl("B3", D3)
    plans = plan_load_dates([b1, b3], WarehouseFacts(applied=applied((D1, [b1]))), WINDOW)
    assert statuses(plans) == {D1: DateStatus.APPLIED, D2: DateStatus.MISSING, D3: DateStatus.DELAYED}
    assert next_to_apply(plans) is None
    filled = plan_load_dates([b1, dl("B2", D2), b3], WarehouseFacts(applied=applied((D1, [b1]))), WINDOW)
    nxt = next_to_apply(filled)
    assert nxt is not None
    assert nxt.load_date == D2
    assert by_date(filled)[D3].status is DateStatus.READY


def test_missing_vs_waiting_at_the_frontier() -> None:
    # crm delivered D1 only; erp delivered D1 and D2: D2 is the frontier, crm may still deliver
    deliveries = [dl("E1", D1), dl("E2", D2), dl("C1", D1, source="crm")]
    plans = plan_load_dates(deliveries, NO_FACTS, WINDOW)
    assert statuses(plans) == {D1: DateStatus.READY, D2: DateStatus.WAITING}
    assert "crm" in by_date(plans)[D2].reason
    # once erp delivers D3, crm's D2 is a hole behind a later date: MISSING
    plans = plan_load_dates([*deliveries, dl("E3", D3)], NO_FACTS, WINDOW)
    assert statuses(plans)[D2] is DateStatus.MISSING
    assert "crm" in by_date(plans)[D2].reason
    assert statuses(plans)[D3] in {DateStatus.WAITING, DateStatus.DELAYED}
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D1


def test_two_sources_date_waits_for_the_one_that_has_not_delivered() -> None:
    plans = plan_load_dates([dl("E1", D1), dl("C1", D1, source="crm"), dl("E2", D2)], NO_FACTS, WINDOW)
    d2 = by_date(plans)[D2]
    assert d2.status is DateStatus.WAITING
    assert d2.batches == (dl("E2", D2),)
    both = plan_load_dates(
        [dl("E1", D1), dl("C1", D1, source="crm"), dl("E2", D2), dl("C2", D2, source="crm")], NO_FACTS, WINDOW
    )
    assert statuses(both) == {D1: DateStatus.READY, D2: DateStatus.READY}
    assert {b.batch_id for b in by_date(both)[D2].batches} == {"E2", "C2"}


def test_configured_source_start_is_respected() -> None:
    # crm starts on D2: it is not missing on D1, it is on D2
    sources = {"erp": D1, "crm": D2}
    plans = plan_load_dates([dl("E1", D1), dl("E2", D2), dl("E3", D3)], NO_FACTS, WINDOW, sources)
    assert statuses(plans) == {D1: DateStatus.READY, D2: DateStatus.MISSING, D3: DateStatus.WAITING}
    assert "crm" in by_date(plans)[D2].reason


def test_configured_source_that_never_delivered_holds_back_the_first_date() -> None:
    plans = plan_load_dates([dl("E1", D1)], NO_FACTS, WINDOW, {"erp": D1, "crm": D1})
    assert statuses(plans) == {D1: DateStatus.WAITING}
    assert next_to_apply(plans) is None


def test_blocked_upstream_names_the_batch_and_the_file() -> None:
    bad = dl("B2", D2, not_ready="file B2.jsonl is missing (B2.manifest.json)")
    plans = plan_load_dates([dl("B1", D1), bad, dl("B3", D3)], NO_FACTS, WINDOW)
    assert statuses(plans) == {D1: DateStatus.READY, D2: DateStatus.BLOCKED_UPSTREAM, D3: DateStatus.DELAYED}
    reason = by_date(plans)[D2].reason
    assert "B2" in reason
    assert "erp" in reason
    assert "B2.jsonl is missing" in reason


def test_blocked_upstream_first_date_stops_everything() -> None:
    plans = plan_load_dates(
        [dl("B1", D1, not_ready="ready_at in the future"), dl("B2", D2)], NO_FACTS, WINDOW
    )
    assert statuses(plans) == {D1: DateStatus.BLOCKED_UPSTREAM, D2: DateStatus.DELAYED}
    assert next_to_apply(plans) is None


def test_restate_latest_applied_date_with_a_new_manifest() -> None:
    b1, extra = dl("B1", D1), dl("B1-fix", D1, ready_at="2026-01-01T09:00:00+00:00")
    plans = plan_load_dates([b1, extra], WarehouseFacts(applied=applied((D1, [b1]))), WINDOW)
    plan = by_date(plans)[D1]
    assert plan.status is DateStatus.RESTATE
    assert plan.batches == (b1, extra)
    assert plan.identity == input_identity([b1, extra])
    assert next_to_apply(plans) == plan


def test_late_delivery_for_an_earlier_applied_date() -> None:
    b1, b2, late = dl("B1", D1), dl("B2", D2), dl("B1-late", D1, ready_at="2026-01-03T06:00:00+00:00")
    facts = WarehouseFacts(applied=applied((D1, [b1]), (D2, [b2])))
    plans = plan_load_dates([b1, b2, late], facts, WINDOW)
    assert statuses(plans) == {D1: DateStatus.LATE_DELIVERY, D2: DateStatus.APPLIED}
    assert "REPLAY_LOAD_DATE_SEALED" in by_date(plans)[D1].reason
    assert next_to_apply(plans) is None


def test_late_delivery_does_not_hold_back_the_next_date() -> None:
    b1, b2, b3, late = dl("B1", D1), dl("B2", D2), dl("B3", D3), dl("B1-late", D1)
    facts = WarehouseFacts(applied=applied((D1, [b1]), (D2, [b2])))
    plans = plan_load_dates([b1, b2, b3, late], facts, WINDOW)
    assert by_date(plans)[D1].status is DateStatus.LATE_DELIVERY
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D3


def test_applied_date_with_a_new_delivery_that_is_not_ready_stays_applied() -> None:
    b1, pending = dl("B1", D1), dl("B1-fix", D1, not_ready="file B1-fix.jsonl is missing")
    plans = plan_load_dates([b1, pending], WarehouseFacts(applied=applied((D1, [b1]))), WINDOW)
    plan = by_date(plans)[D1]
    assert plan.status is DateStatus.APPLIED
    assert "B1-fix.jsonl is missing" in plan.reason
    assert next_to_apply(plans) is None


def test_blocked_by_warehouse_facts_and_unblocked_by_a_corrected_batch() -> None:
    b1, b2 = dl("B1", D1), dl("B2", D2)
    reason = "EVENT_ID_CONFLICT: event e7 of batch B1"
    facts = WarehouseFacts(blocked={(D1, input_identity([b1])): (DateStatus.BLOCKED, reason)})
    plans = plan_load_dates([b1, b2], facts, WINDOW)
    assert statuses(plans) == {D1: DateStatus.BLOCKED, D2: DateStatus.DELAYED}
    assert by_date(plans)[D1].reason == reason
    assert next_to_apply(plans) is None
    # the source re-delivers a corrected batch under a new id that supersedes the bad one
    fixed = dl("B1-v2", D1, supersedes=("B1",))
    plans = plan_load_dates([b1, fixed, b2], facts, WINDOW)
    d1 = by_date(plans)[D1]
    assert d1.status is DateStatus.READY
    assert d1.batches == (fixed,)
    assert next_to_apply(plans) == d1


def test_operator_skip_unblocks_the_date_with_no_batches() -> None:
    b1, b2 = dl("B1", D1), dl("B2", D2)
    blocked = {(D1, input_identity([b1])): (DateStatus.BLOCKED, "EQUAL_VERSION_CONFLICT")}
    plans = plan_load_dates([b1, b2], WarehouseFacts(blocked=blocked, skipped=frozenset({"B1"})), WINDOW)
    d1 = by_date(plans)[D1]
    assert d1.status is DateStatus.READY  # the skipped batch still counts as the source's delivery
    assert d1.batches == ()
    assert d1.identity == input_identity([])
    assert statuses(plans)[D2] is DateStatus.READY


def test_skipped_batch_counts_as_delivered_among_two_sources() -> None:
    deliveries = [dl("E1", D1), dl("C1", D1, source="crm")]
    plans = plan_load_dates(deliveries, WarehouseFacts(skipped=frozenset({"C1"})), WINDOW)
    d1 = by_date(plans)[D1]
    assert d1.status is DateStatus.READY
    assert d1.batches == (dl("E1", D1),)


def test_batch_id_reused_with_other_content_blocks() -> None:
    b1, b2 = dl("B1", D1, sha="new-content"), dl("B2", D2)
    facts = WarehouseFacts(landed={"B1": "old-content"})
    plans = plan_load_dates([b1, b2], facts, WINDOW)
    d1 = by_date(plans)[D1]
    assert d1.status is DateStatus.BLOCKED
    assert "REPLAY_BATCH_ID_REUSED" in d1.reason
    assert "B1" in d1.reason
    assert b1 not in d1.batches
    assert statuses(plans)[D2] is DateStatus.DELAYED
    assert next_to_apply(plans) is None


def test_same_batch_landed_again_with_the_same_content_is_fine() -> None:
    b1 = dl("B1", D1, sha="same")
    plans = plan_load_dates([b1], WarehouseFacts(landed={"B1": "same"}), WINDOW)
    assert statuses(plans) == {D1: DateStatus.READY}
    assert by_date(plans)[D1].batches == (b1,)


def test_supersedes_excludes_a_batch() -> None:
    old, new = dl("B1", D1), dl("B1-v2", D1, supersedes=("B1",))
    plan = by_date(plan_load_dates([old, new], NO_FACTS, WINDOW))[D1]
    assert plan.status is DateStatus.READY
    assert plan.batches == (new,)
    assert plan.identity == input_identity([new])


def test_superseded_not_ready_batch_does_not_block() -> None:
    old = dl("B1", D1, not_ready="file B1.jsonl has 3 bytes, manifest says 9")
    new = dl("B1-v2", D1, supersedes=("B1",))
    plan = by_date(plan_load_dates([old, new], NO_FACTS, WINDOW))[D1]
    assert plan.status is DateStatus.READY
    assert plan.batches == (new,)


def test_out_of_range_load_dates() -> None:
    window = ("2026-01-02", "2026-01-03")
    early, inside, late = dl("B0", D1), dl("B2", D2), dl("B9", "2026-02-01")
    plans = plan_load_dates([early, inside, late], NO_FACTS, window)
    out = [p for p in plans if p.status is DateStatus.OUT_OF_RANGE]
    assert {p.load_date for p in out} == {D1, "2026-02-01"}
    assert all(p.batches in {(early,), (late,)} for p in out)
    assert any("B0" in p.reason for p in out)
    assert {p.load_date: p.status for p in plans if p.status is not DateStatus.OUT_OF_RANGE} == {
        D2: DateStatus.READY
    }
    nxt = next_to_apply(plans)
    assert nxt is not None
    assert nxt.load_date == D2


def test_only_out_of_range_deliveries() -> None:
    plans = plan_load_dates([dl("B0", "2025-12-31")], NO_FACTS, WINDOW)
    assert [p.status for p in plans] == [DateStatus.OUT_OF_RANGE]
    assert next_to_apply(plans) is None


def test_no_deliveries_no_plans() -> None:
    assert plan_load_dates([], NO_FACTS, WINDOW) == []
    assert next_to_apply([]) is None


def test_input_identity_depends_on_manifest_content() -> None:
    a, b = dl("B1", D1, sha="x"), dl("B1", D1, sha="y")
    assert input_identity([a]) != input_identity([b])
    assert input_identity([a]) != input_identity([])
    assert input_identity([a, dl("B2", D1)]) != input_identity([a])


@settings(max_examples=50, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["erp", "crm"]),
            st.text("abcdef0123", min_size=1, max_size=6),
            st.text(max_size=4),
        ),
        max_size=6,
    ),
    st.data(),
)
def test_input_identity_is_order_independent(parts: list[tuple[str, str, str]], data: st.DataObject) -> None:
    batches = [dl(batch_id, D1, source=source, sha=f"sha-{sha}") for source, batch_id, sha in parts]
    shuffled = data.draw(st.permutations(batches))
    assert input_identity(shuffled) == input_identity(batches)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Delivery], WarehouseFacts]:
    days = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"]
    deliveries = []
    for n in range(draw(st.integers(0, 8))):
        source = draw(st.sampled_from(["erp", "crm"]))
        not_ready = draw(st.sampled_from([None, None, None, "file x is missing"]))
        deliveries.append(dl(f"B{n}", draw(st.sampled_from(days)), source=source, not_ready=not_ready))
    applied_days = days[: draw(st.integers(0, 3))]
    facts = WarehouseFacts(
        applied={
            day: input_identity([d for d in deliveries if d.load_date == day and not d.not_ready])
            for day in applied_days
        }
    )
    return deliveries, facts


@settings(max_examples=80, deadline=None, database=None)
@given(scenarios())
def test_next_to_apply_never_skips_an_unapplied_earlier_date(
    case: tuple[list[Delivery], WarehouseFacts],
) -> None:
    deliveries, facts = case
    plans = plan_load_dates(deliveries, facts, WINDOW)
    in_range = [p for p in plans if p.status is not DateStatus.OUT_OF_RANGE]
    assert [p.load_date for p in in_range] == sorted({p.load_date for p in in_range})
    nxt = next_to_apply(plans)
    if nxt is None:
        return
    assert nxt.status in {DateStatus.READY, DateStatus.RESTATE}
    assert not any(b.not_ready for b in nxt.batches)
    for plan in in_range:
        if plan.load_date < nxt.load_date:
            assert plan.status in {DateStatus.APPLIED, DateStatus.LATE_DELIVERY}
    # after a date that cannot apply, nothing later is READY
    stopped = False
    for plan in in_range:
        if stopped:
            assert plan.status not in {DateStatus.READY, DateStatus.RESTATE}
        if plan.status in {
            DateStatus.WAITING,
            DateStatus.MISSING,
            DateStatus.BLOCKED,
            DateStatus.BLOCKED_UPSTREAM,
        }:
            stopped = True
