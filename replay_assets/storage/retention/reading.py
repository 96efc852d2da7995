"""What retention reads of a pruned load date, written once for both engines over the unit's
``Sql``: the counts its pruning recorded, as the operation's target hash."""

from __future__ import annotations

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.rules.sql import Sql

PRUNED = """
SELECT raw_receipts, staged_events, registry_rows, history_rows FROM pruned_load_dates
WHERE load_date = $day"""


def pruned_digest(sql: Sql, day: str) -> str | None:
    """What the pruning of ``day`` recorded (its counts), as the operation's target hash."""
    found = sql.rows(PRUNED, day=day)
    return sha256_text(canonical_json([day, *found[0].values()])) if found else None
