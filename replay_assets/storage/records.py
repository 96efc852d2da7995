"""Records the warehouse's ports hand over, whatever the engine: an operation of the journal
(its identity and intent) and the entry recorded for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_assets.core.status import CommitState


@dataclass(frozen=True)
class Entry:
    operation_id: str
    kind: str
    asset: str
    partition_key: str
    intent_digest: str
    state: CommitState
    version: int
    result: dict[str, Any] | None
    target_sha256: str | None


@dataclass(frozen=True)
class Operation:
    operation_id: str
    intent_digest: str
    kind: str
    asset: str
    partition_key: str
    input_identity: str
