"""The fold of one load date in DuckDB: :func:`core.fold.fold_frame`'s contract, set-based over
tables, so a load date of any size is folded within the warehouse's memory limit (DuckDB spills)
instead of in Python frames. The core's sequential ``fold_reference`` stays the oracle; a property
test proves this SQL equals it, conflicts included.

Reads the relations ``_events`` (``pos`` and the fold's event columns), ``_committed`` (each
touched key's state before the load date) and ``_registry`` (registry rows sharing an event id or
a source_seq with the load date), and creates the temporary table ``_fold``:
``pos, outcome, rule, winner``.
"""

from __future__ import annotations

import duckdb

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome

_SQL = """
CREATE OR REPLACE TEMP TABLE _fold AS
WITH firsts AS (
    SELECT pos, source, event_id, source_seq, entity, key, version, content_sha256, image_sha256,
        arg_min(content_sha256, pos) OVER (PARTITION BY source, event_id) AS id_first,
        pos = min(pos) OVER (PARTITION BY source, event_id) AS is_first_id,
        arg_min(content_sha256, pos) OVER (PARTITION BY source, source_seq) AS seq_first
    FROM _events
), joined AS (
    SELECT f.*, r1.content_sha256 AS reg_id, r2.content_sha256 AS reg_seq,
        c.version AS cv, c.image_sha256 AS c_image
    FROM firsts f
    LEFT JOIN _registry r1 ON r1.source = f.source AND r1.event_id = f.event_id
    LEFT JOIN _registry r2 ON r2.source = f.source AND r2.source_seq = f.source_seq
    LEFT JOIN _committed c ON c.entity = f.entity AND c.key = f.key
), known AS (
    SELECT *,
        coalesce(reg_id, CASE WHEN NOT is_first_id THEN id_first END) AS known_id,
        coalesce(reg_seq, CASE WHEN seq_first <> content_sha256 THEN seq_first END) AS known_seq
    FROM joined
), ruled AS (
    SELECT *,
        CASE WHEN known_id IS NOT NULL AND known_id <> content_sha256 THEN $id_conflict
             WHEN known_seq IS NOT NULL AND known_seq <> content_sha256 THEN $seq_conflict END AS rule0,
        known_id IS NOT NULL AS dup_id
    FROM known
), fenced AS (
    SELECT *, rule0 IS NULL AND NOT dup_id AND (cv IS NULL OR version > cv) AS above,
        rule0 IS NULL AND NOT dup_id AS fresh
    FROM ruled
), slots AS (
    SELECT *,
        min(pos) FILTER (WHERE above) OVER (PARTITION BY entity, key, version) AS slot_pos,
        arg_min(image_sha256, pos) FILTER (WHERE above) OVER (PARTITION BY entity, key, version) AS slot_image
    FROM fenced
), outcomes AS (
    SELECT pos, entity, key, version, rule0,
        CASE WHEN rule0 IS NOT NULL THEN $violation
             WHEN dup_id THEN $duplicate
             WHEN fresh AND version < cv THEN $stale
             WHEN fresh AND version = cv AND image_sha256 = c_image THEN $duplicate
             WHEN fresh AND version = cv THEN $violation
             WHEN pos = slot_pos THEN $accepted
             WHEN image_sha256 = slot_image THEN $duplicate
             ELSE $violation END AS outcome
    FROM slots
)
SELECT pos, outcome,
    CASE WHEN outcome = $violation AND rule0 IS NULL THEN $equal_conflict ELSE rule0 END AS rule,
    coalesce(outcome = $accepted
        AND version = max(version) FILTER (WHERE outcome = $accepted) OVER (PARTITION BY entity, key),
        false) AS winner
FROM outcomes"""


def fold_into(con: duckdb.DuckDBPyConnection) -> None:
    """Fold ``_events`` onto ``_committed`` and ``_registry`` into the temporary table ``_fold``."""
    con.execute(
        _SQL,
        {
            "id_conflict": Violation.EVENT_ID_CONFLICT.value,
            "seq_conflict": Violation.SOURCE_SEQ_CONFLICT.value,
            "equal_conflict": Violation.EQUAL_VERSION_CONFLICT.value,
            "violation": Outcome.VIOLATION.value,
            "duplicate": Outcome.DUPLICATE.value,
            "stale": Outcome.STALE.value,
            "accepted": Outcome.ACCEPTED.value,
        },
    )
