"""The operation the journal's contract tests run on every store: its mutation appends one
step-attempt row, so a second mutation shows as a second row."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from replay_assets.core.journal import intent_digest, operation_id
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal.entries import Operation

NOW = dt.datetime(2026, 10, 1, 12, tzinfo=dt.UTC)
RUN = "run-contract"
KIND = "contract"


def operation(name: str = "one", intent: int = 1) -> Operation:
    return Operation(
        operation_id(KIND, "sensor", name, name),
        intent_digest({"intent": intent}),
        kind=KIND,
        asset="sensor",
        partition_key=name,
        input_identity=name,
    )


def mark(unit: Any, outcome: str) -> None:
    unit.evidence.record_step_attempt(
        RUN, step=KIND, partition_key="p", attempt=1, outcome=outcome, detail="-", now=NOW
    )


def mutations(store: Any) -> list[str]:
    with store.read() as unit:
        return [row[3] for row in unit.evidence.step_attempts(RUN)]


def execute(
    store: Any,
    op: Operation | None = None,
    *,
    mutate: Callable[[Any], tuple[dict[str, Any], str | None]] | None = None,
    evidence: Callable[[], object] = lambda: None,
    calls: list[str] | None = None,
    fail_point: str | None = None,
) -> dict[str, Any]:
    seen = calls if calls is not None else []

    def mutated(unit: Any) -> tuple[dict[str, Any], str | None]:
        seen.append("mutate")
        mark(unit, "MUTATED")
        return {"mutated": True}, "target-1"

    return journal.execute(
        store,
        op or operation(),
        mutate=mutate or mutated,
        evidence=evidence,
        target_now=lambda unit, entry: "target-1",
        clock=lambda: NOW,
        fail_point=fail_point,
    )
