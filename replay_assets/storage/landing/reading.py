"""What the landing port reads of landed batches, written once for both engines over the unit's
``Sql``: a batch's manifest, its schema-gate refusals and whether it broke the contract on a date."""

from __future__ import annotations

from replay_assets.core.errors import Violation
from replay_assets.storage.rules.sql import Sql

MANIFEST = "SELECT load_date, manifest_sha256 FROM manifests WHERE batch_id = $batch"
VIOLATIONS = "SELECT count(*) AS n FROM batch_violations WHERE batch_id = $batch AND rule = $rule"
VIOLATED_ON = "SELECT count(*) AS n FROM batch_violations WHERE batch_id = $batch AND load_date = $day"


def landed_batch(sql: Sql, batch_id: str) -> tuple[str, str] | None:
    """The load date and manifest sha256 a landed batch came with, or None."""
    found = sql.rows(MANIFEST, batch=batch_id)
    return (str(found[0]["load_date"]), str(found[0]["manifest_sha256"])) if found else None


def schema_gated(sql: Sql, batch_id: str) -> int:
    """How many of the batch's events the schema gate refused (an undeclared schema version)."""
    rule = Violation.UNSUPPORTED_SCHEMA_VERSION.value
    return int(sql.rows(VIOLATIONS, batch=batch_id, rule=rule)[0]["n"])


def violated_on(sql: Sql, batch_id: str, load_date: str) -> bool:
    """Whether the batch has a contract violation recorded on ``load_date``."""
    return int(sql.rows(VIOLATED_ON, batch=batch_id, day=load_date)[0]["n"]) > 0
