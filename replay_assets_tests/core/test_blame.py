"""The words ``status`` shows and ``resolve`` reads for a late batch that conflicts with a later
load date (SPEC 10, "Late delivery on a sealed load date"): every culprit gets a command an
operator can run as printed, and only a culprit can be skipped by those words."""

from __future__ import annotations

import shlex

from replay_assets.core.blame import blames_late, late_conflict_reason
from replay_assets.core.plan import DatePlan, Delivery
from replay_assets.core.status import DateStatus

D1, D2 = "2026-01-08", "2026-01-09"


def delivery(batch_id: str, load_date: str) -> Delivery:
    return Delivery("erp", batch_id, load_date, "0" * 64, "2026-01-08T00:00:00Z")


def plan(load_date: str, *late: Delivery) -> DatePlan:
    return DatePlan(
        load_date, DateStatus.APPLIED, "", "", (delivery("b" + load_date[-1], load_date),), late=late
    )


def test_each_late_culprit_gets_a_command_that_runs_as_printed() -> None:
    chain = [plan(D1, delivery("late1", D1), delivery("late2", D1)), plan(D2)]
    reason = late_conflict_reason(chain, D2, "EVENT_ID_CONFLICT at event e3 (batch b9 line 1)")
    skips = [shlex.split(c) for c in reason.split("skip each (")[1].split(")")[0].split("; ")]
    assert skips == [
        ["resolve", "--batch-id", "late1", "--action", "skip"],
        ["resolve", "--batch-id", "late2", "--action", "skip"],
    ], reason
    assert blames_late(reason, "late1") and blames_late(reason, "late2")


def test_a_batch_the_conflicts_detail_mentions_is_never_blamed() -> None:
    chain = [plan(D1, delivery("late", D1)), plan(D2)]
    reason = late_conflict_reason(chain, D2, "EVENT_ID_CONFLICT: batch b2 of erp delivered e3 first")
    assert blames_late(reason, "late")
    assert not blames_late(reason, "b2") and not blames_late(reason, "b1")
    own_words = late_conflict_reason([plan(D1), plan(D2)], D2, "batch b2 of erp: EVENT_ID_CONFLICT")
    assert not blames_late(own_words, "b2")  # no late batch on record: nobody is blamed by name
