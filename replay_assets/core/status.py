"""Every status word of the product, in one place: one enum per thing that has a status, each
name equal to its stored value, and a word shared by two enums means the same thing in both
(``test_status_vocabulary.py`` checks it). Pure.

- ``DateStatus``: where a load date stands in the plan (what applies next, and why the rest waits).
- ``PartitionStatus``: what a consumer of one asset partition sees (``partition_status``).
- ``ApplyOutcome``: what applying one load date did (recorded in the journal).
- ``CommitState``: where a journaled operation stands.
"""

from __future__ import annotations

import enum


class DateStatus(enum.StrEnum):
    APPLIED = "APPLIED"
    READY = "READY"
    RESTATE = "RESTATE"  # the latest applied date got a new delivery: fold it again whole
    WAITING = "WAITING"  # a source has not delivered yet, and nothing later has either
    BLOCKED_UPSTREAM = "BLOCKED_UPSTREAM"
    MISSING = "MISSING"
    BLOCKED = "BLOCKED"
    DELAYED = "DELAYED"
    LATE_DELIVERY = "LATE_DELIVERY"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    FAILED_CANDIDATE = "FAILED_CANDIDATE"


class PartitionStatus(enum.StrEnum):
    CERTIFIED = "CERTIFIED"
    RESTATED = "RESTATED"
    PENDING_RESTATEMENT = "PENDING_RESTATEMENT"
    FAILED_CANDIDATE = "FAILED_CANDIDATE"
    SUSPECT = "SUSPECT"
    BLOCKED_UPSTREAM = "BLOCKED_UPSTREAM"
    BLOCKED = "BLOCKED"
    MISSING = "MISSING"
    DELAYED = "DELAYED"
    LATE_DELIVERY = "LATE_DELIVERY"


class ApplyOutcome(enum.StrEnum):
    APPLIED = "APPLIED"  # folded and certified
    RESTATED = "RESTATED"  # folded again whole after a redelivery, and certified
    UNCHANGED = "UNCHANGED"  # a retry found the certified state already there (verified, no write)
    BLOCKED = "BLOCKED"  # a batch-level violation: nothing applied
    FAILED_CANDIDATE = "FAILED_CANDIDATE"  # folded, failed the gate, rolled back and kept for inspection


class CommitState(enum.StrEnum):
    PREPARING = "PREPARING"
    PREPARED = "PREPARED"
    COMMITTING = "COMMITTING"
    TARGET_COMMITTED = "TARGET_COMMITTED"
    COMMITTED_INCOMPLETE = "COMMITTED_INCOMPLETE"
    COMPLETE = "COMPLETE"
    COMMIT_UNKNOWN = "COMMIT_UNKNOWN"
    FAILED_PRE_COMMIT = "FAILED_PRE_COMMIT"


# the partition status a waiting load date gives its current_orders partition
WAITING_PARTITION_STATUS = {
    DateStatus.BLOCKED_UPSTREAM: PartitionStatus.BLOCKED_UPSTREAM,
    DateStatus.MISSING: PartitionStatus.MISSING,
    DateStatus.BLOCKED: PartitionStatus.BLOCKED,
    DateStatus.DELAYED: PartitionStatus.DELAYED,
    DateStatus.LATE_DELIVERY: PartitionStatus.LATE_DELIVERY,
}
