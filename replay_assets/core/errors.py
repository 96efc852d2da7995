"""Stable reason and error codes. Closed sets, so they are StrEnums."""

from __future__ import annotations

import enum


class RejectReason(enum.StrEnum):
    """Why one event was rejected (it goes to ``rejected_events``; its batch still applies)."""

    MALFORMED_JSON = "MALFORMED_JSON"
    DUPLICATE_KEY = "DUPLICATE_KEY"
    INVALID_UTF8 = "INVALID_UTF8"
    LINE_TOO_LONG = "LINE_TOO_LONG"
    MISSING_FIELD = "MISSING_FIELD"
    UNKNOWN_FIELD = "UNKNOWN_FIELD"
    BAD_VALUE = "BAD_VALUE"
    BAD_ID = "BAD_ID"
    KEY_IMAGE_MISMATCH = "KEY_IMAGE_MISMATCH"
    OUTSIDE_DECLARED_SLICE = "OUTSIDE_DECLARED_SLICE"
    BUSINESS_DATE_OUT_OF_RANGE = "BUSINESS_DATE_OUT_OF_RANGE"
    UPCAST_FAILED = "UPCAST_FAILED"  # a declared upcaster cannot map the event (core/upcast.py)
    UNMAPPED_RECORD = "UNMAPPED_RECORD"  # an adapter could not map a source record (core/events.py)


class Violation(enum.StrEnum):
    """A batch-level contract violation (fail closed): the whole load date is blocked."""

    UNSUPPORTED_SCHEMA_VERSION = "UNSUPPORTED_SCHEMA_VERSION"
    EVENT_ID_CONFLICT = "EVENT_ID_CONFLICT"
    SOURCE_SEQ_CONFLICT = "SOURCE_SEQ_CONFLICT"
    EQUAL_VERSION_CONFLICT = "EQUAL_VERSION_CONFLICT"


class ErrorCode(enum.StrEnum):
    """Codes carried by :class:`ReplayError`; stable, documented in docs/errors.md."""

    WAREHOUSE_BUSY = "REPLAY_WAREHOUSE_BUSY"
    WAREHOUSE_UNREADABLE = "REPLAY_WAREHOUSE_UNREADABLE"
    WAREHOUSE_OUTDATED = "REPLAY_WAREHOUSE_OUTDATED"
    BATCH_ID_REUSED = "REPLAY_BATCH_ID_REUSED"
    LOAD_DATE_SEALED = "REPLAY_LOAD_DATE_SEALED"
    HISTORY_DIVERGED = "REPLAY_HISTORY_DIVERGED"
    NOT_READY = "REPLAY_NOT_READY"
    BATCH_BLOCKED = "REPLAY_BATCH_BLOCKED"
    UNKNOWN_BATCH = "REPLAY_UNKNOWN_BATCH"
    DAEMON_RUNNING = "REPLAY_DAEMON_RUNNING"
    USAGE = "REPLAY_USAGE"
    COMMIT_INTENT_CONFLICT = "REPLAY_COMMIT_INTENT_CONFLICT"
    COMMIT_UNKNOWN = "REPLAY_COMMIT_UNKNOWN"
    RECOVERY_CONFLICT = "REPLAY_RECOVERY_CONFLICT"
    BEHIND_HORIZON = "REPLAY_BEHIND_HORIZON"
    INSTANCE_UNREACHABLE = "REPLAY_INSTANCE_UNREACHABLE"
    HOME_FILE_REFUSED = "REPLAY_HOME_FILE_REFUSED"
    WAREHOUSE_UNREACHABLE = "REPLAY_WAREHOUSE_UNREACHABLE"


class ReplayError(Exception):
    """A failure with a stable code. Messages name files, batches, events and rules, never row values."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
