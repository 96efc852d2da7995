"""The operation journal's state machine and identities (seed 004). Pure.

Every mutation (applying a load date, publishing aggregates) is an operation whose id is derived
from its logical identity only, so a retry — another try, another run id — finds the same entry
and, from its state, does exactly what is still missing: nothing, evidence only, or the mutation.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.status import CommitState

CODE_VERSION = "replay-assets/1"


S = CommitState
# COMMIT_UNKNOWN is an operator's hold (`recovery apply --action mark-unknown`): no automatic path
# enters it, because the fence, written in the target's own transaction, always tells whether the
# mutation committed. It is left only by the operator's mark that agrees with the fence.
TRANSITIONS: Mapping[CommitState, frozenset[CommitState]] = {
    S.PREPARING: frozenset({S.PREPARED, S.FAILED_PRE_COMMIT}),
    S.PREPARED: frozenset({S.COMMITTING, S.FAILED_PRE_COMMIT}),
    S.COMMITTING: frozenset({S.TARGET_COMMITTED, S.COMMIT_UNKNOWN, S.PREPARED}),
    S.TARGET_COMMITTED: frozenset({S.COMMITTED_INCOMPLETE, S.COMMIT_UNKNOWN}),
    S.COMMITTED_INCOMPLETE: frozenset({S.COMPLETE, S.COMMIT_UNKNOWN}),
    S.COMPLETE: frozenset(),
    S.COMMIT_UNKNOWN: frozenset({S.TARGET_COMMITTED, S.PREPARED}),
    S.FAILED_PRE_COMMIT: frozenset({S.PREPARING}),
}
# the mutation began and the operation is not COMPLETE: an operator may hold these
MUTATION_BEGUN = frozenset({S.COMMITTING, S.TARGET_COMMITTED, S.COMMITTED_INCOMPLETE})
IN_DOUBT = MUTATION_BEGUN | {S.COMMIT_UNKNOWN}


class Next(enum.StrEnum):
    """What a (re)started execution must do, decided from durable facts only."""

    MUTATE = "mutate"  # no mutation began, or it provably did not commit
    COMPLETE_EVIDENCE = "complete_evidence"  # the target committed; finish evidence only
    RETURN_RECORDED = "return_recorded"  # done, and the target still matches the record
    REPAIR = "repair"  # done, but the target drifted from the record: a repair operation runs
    STOP = "stop"  # held by an operator: nothing runs until it is marked (REPLAY_COMMIT_UNKNOWN)


def operation_id(kind: str, asset: str, partition_key: str, input_identity: Any) -> str:
    """sha256 of the logical identity: never a run id, try number, backfill id, time or random."""
    return sha256_text(canonical_json([kind, asset, partition_key, input_identity, CODE_VERSION]))


def intent_digest(intent: Mapping[str, Any]) -> str:
    """sha256 of the normalised mutation intent (sorted-key JSON)."""
    return sha256_text(canonical_json(dict(intent)))


def can_move(current: CommitState, nxt: CommitState) -> bool:
    return nxt in TRANSITIONS[current]


def next_step(state: CommitState | None, fence_committed: bool, target_matches: bool) -> Next:
    """The recovery decision of seed 004's algorithm, for one operation.

    ``fence_committed``: the commit marker is in the target (written in the mutation's own
    transaction, so it proves commit). ``target_matches``: the target still holds the recorded
    result (checked only for COMPLETE).
    """
    if state is None or state in (S.PREPARING, S.PREPARED, S.FAILED_PRE_COMMIT):
        return Next.COMPLETE_EVIDENCE if fence_committed else Next.MUTATE
    if state is S.COMMITTING:
        return Next.COMPLETE_EVIDENCE if fence_committed else Next.MUTATE
    if state in (S.TARGET_COMMITTED, S.COMMITTED_INCOMPLETE):
        return Next.COMPLETE_EVIDENCE
    if state is S.COMPLETE:
        return Next.RETURN_RECORDED if target_matches else Next.REPAIR
    return Next.STOP
