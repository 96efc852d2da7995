"""Recording the live status of every waiting load date (MISSING, DELAYED, ...) in
``partition_status``: what ``run`` does after applying. ``status`` computes the same rows
read-only (``Operations.status_report``)."""

from __future__ import annotations

from replay_assets.core.status import WAITING_PARTITION_STATUS
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import Decision, decide_with


def record_waiting_statuses(pipeline: Pipeline) -> Decision:
    with pipeline.store.transaction() as unit:
        decision, _ = decide_with(pipeline, unit)
        for plan in decision.plans:
            if plan.status in WAITING_PARTITION_STATUS:
                unit.evidence.set_status(
                    "current_orders",
                    keys=[plan.load_date],
                    status=WAITING_PARTITION_STATUS[plan.status],
                    reason=plan.reason,
                    now=pipeline.now(),
                )
        return decision
