"""The operation journal's row as both engines store it."""

from __future__ import annotations

COLUMNS = "operation_id, kind, asset, partition_key, intent_digest, state, version, result, target_sha256"
