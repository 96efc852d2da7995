"""Applying a load date to current state, as pure values: the reference pipeline.

:func:`apply_load_date` validates every line, folds the valid events through the fence
(:mod:`replay_assets.core.fold`), and returns the new state, the registry additions, the
reconciliation per batch and the affected aggregate groups. Storage does the same with frames;
tests prove both agree. Idempotent: applying the same batches again changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay_assets.core.errors import RejectReason, Violation
from replay_assets.core.events import (
    BatchViolation,
    Entity,
    Event,
    Rejection,
    ValidationContext,
    parse_event,
)
from replay_assets.core.fold import (
    Committed,
    FoldInput,
    FoldResult,
    Outcome,
    fold_reference,
)

StateKey = tuple[str, str]
Group = tuple[str, str]  # (business_date, store_id)


@dataclass(frozen=True)
class Row:
    """Current state of one key; ``image`` None means a tombstone."""

    version: int
    image: dict[str, Any] | None
    image_sha256: str
    source_seq: int
    load_date: str


@dataclass(frozen=True)
class Batch:
    source: str
    batch_id: str
    ready_at: str
    lines: Sequence[str]


@dataclass(frozen=True)
class Counts:
    """Reconciliation of one batch: source events = accepted + rejected + skipped."""

    source_events: int = 0
    accepted: int = 0
    rejected: int = 0
    skipped_duplicate: int = 0
    skipped_stale: int = 0

    def balanced(self) -> bool:
        parts = self.accepted + self.rejected + self.skipped_duplicate + self.skipped_stale
        return self.source_events == parts


@dataclass(frozen=True)
class Blocked:
    batch_id: str
    line_number: int
    rule: Violation
    detail: str
    event_id: str | None


@dataclass(frozen=True)
class Rejected:
    batch_id: str
    line_number: int
    reason: RejectReason
    detail: str
    event_id: str | None


@dataclass(frozen=True)
class LoadDateOutcome:
    state: dict[StateKey, Row]
    registry: dict[tuple[str, str], tuple[int, str]]
    counts: dict[str, Counts]
    rejected: list[Rejected]
    blocked: list[Blocked]
    affected: frozenset[Group] = field(default_factory=frozenset)


def delivery_order(batches: Sequence[Batch]) -> list[Batch]:
    """The order of application inside a load date: (ready_at, batch_id); lines keep file order."""
    return sorted(batches, key=lambda b: (b.ready_at, b.batch_id))


def apply_load_date(
    state: Mapping[StateKey, Row],
    registry: Mapping[tuple[str, str], tuple[int, str]],
    batches: Sequence[Batch],
    load_date: str,
    ctx_for: Callable[[Batch], ValidationContext],
) -> LoadDateOutcome:
    """Fold every batch of one load date onto ``state``. Blocked -> state and registry unchanged."""
    events: list[tuple[Batch, int, Event]] = []
    rejected: list[Rejected] = []
    blocked: list[Blocked] = []
    lines_per_batch: Counter[str] = Counter()
    for batch in delivery_order(batches):
        for number, line in enumerate(batch.lines, start=1):
            if not line.strip():
                continue
            lines_per_batch[batch.batch_id] += 1
            outcome = parse_event(line, ctx_for(batch))
            if isinstance(outcome, Rejection):
                rejected.append(
                    Rejected(
                        batch.batch_id,
                        number,
                        reason=outcome.reason,
                        detail=outcome.detail,
                        event_id=outcome.event_id,
                    )
                )
            elif isinstance(outcome, BatchViolation):
                blocked.append(
                    Blocked(
                        batch.batch_id,
                        number,
                        rule=outcome.rule,
                        detail=outcome.detail,
                        event_id=outcome.event_id,
                    )
                )
            else:
                events.append((batch, number, outcome))
    inputs = [
        FoldInput(
            pos,
            b.source,
            event_id=e.event_id,
            source_seq=e.source_seq,
            entity=e.entity,
            key=e.key,
            version=e.version,
            content_sha256=e.content_sha256,
            image_sha256=e.image_sha256,
        )
        for pos, (b, _, e) in enumerate(events)
    ]
    committed = {k: Committed(r.version, r.image_sha256) for k, r in state.items()}
    result = fold_reference(inputs, committed, registry)
    blocked += _violations(result, events)
    counts = _counts(lines_per_batch, rejected, result, events)
    if blocked:
        return LoadDateOutcome(dict(state), dict(registry), counts=counts, rejected=rejected, blocked=blocked)
    return _commit(
        state, registry, events=events, result=result, load_date=load_date, counts=counts, rejected=rejected
    )


def _violations(result: FoldResult, events: list[tuple[Batch, int, Event]]) -> list[Blocked]:
    out = []
    for pos, (batch, number, event) in enumerate(events):
        rule = result.classified[pos].rule
        if rule is not None:
            out.append(
                Blocked(
                    batch.batch_id,
                    number,
                    rule=rule,
                    detail=f"{rule} at event {event.event_id}",
                    event_id=event.event_id,
                )
            )
    return out


def _counts(
    lines: Counter[str],
    rejected: list[Rejected],
    result: FoldResult,
    events: list[tuple[Batch, int, Event]],
) -> dict[str, Counts]:
    tally: dict[str, Counter[str]] = {batch_id: Counter() for batch_id in lines}
    for r in rejected:
        tally[r.batch_id]["rejected"] += 1
    for pos, (batch, _, _) in enumerate(events):
        outcome = result.classified[pos].outcome
        if outcome is not Outcome.VIOLATION:
            tally[batch.batch_id][outcome.value] += 1
    return {
        batch_id: Counts(
            lines[batch_id],
            c["accepted"],
            rejected=c["rejected"],
            skipped_duplicate=c["skipped_duplicate"],
            skipped_stale=c["skipped_stale"],
        )
        for batch_id, c in tally.items()
    }


def _commit(
    state: Mapping[StateKey, Row],
    registry: Mapping[tuple[str, str], tuple[int, str]],
    events: list[tuple[Batch, int, Event]],
    result: FoldResult,
    load_date: str,
    counts: dict[str, Counts],
    rejected: list[Rejected],
) -> LoadDateOutcome:
    new_state = dict(state)
    new_registry = dict(registry)
    affected: set[Group] = set()
    for pos, (batch, _, event) in enumerate(events):
        new_registry.setdefault((batch.source, event.event_id), (event.source_seq, event.content_sha256))
        if pos not in result.winners:
            continue
        key = (str(event.entity), event.key)
        affected |= groups_of(event.entity, state.get(key)) | groups_of(
            event.entity,
            Row(event.version, event.image, image_sha256=event.image_sha256, source_seq=0, load_date=""),
        )
        new_state[key] = Row(
            event.version,
            event.image,
            image_sha256=event.image_sha256,
            source_seq=event.source_seq,
            load_date=load_date,
        )
    return LoadDateOutcome(
        new_state, new_registry, counts=counts, rejected=rejected, blocked=[], affected=frozenset(affected)
    )


def groups_of(entity: Entity | str, row: Row | None) -> set[Group]:
    """The aggregate group a state row belongs to (old or new image; tombstones have none)."""
    if entity != Entity.ORDER_LINE or row is None or row.image is None:
        return set()
    return {(row.image["business_date"], row.image["store_id"])}
