"""The fold of one load date, the contract of :mod:`core.fold` (rules in its docstring),
set-based over tables. The core's sequential ``fold_reference`` is the oracle; property tests hold
this statement to it on both engines, conflicts included.

Reads the relations ``_events`` (``pos`` and the fold's event columns), ``_committed`` (each
touched key's state before the load date) and ``_registry`` (registry rows sharing an event id or
a source_seq with the load date); returns ``pos, outcome, rule, winner, new_id``.
"""

from __future__ import annotations

from replay_assets.core.errors import Violation
from replay_assets.core.fold import Outcome

# Grouped aggregates joined back rather than window functions: a window sorts every partition
# with its payload, a hash aggregate does not. Only groups of two or more events can decide
# anything (a first event id, a first content for a source_seq, a first event in a version's slot,
# a highest accepted version), so each aggregate runs over its "twins" only: the events whose group
# key's 64-bit bucket (``hash``) occurs twice or more among the load date's events, found by
# grouping integers. A bucket shared by two keys, or counted with events the step then leaves out
# (stale, duplicate), only adds candidates, never removes one, so the result is exact; a test
# renders the statement with three buckets to prove it. The twins are counted over ``_events``, not
# over a materialized step: a third reader of one made DuckDB buffer it past the memory limit at
# 10M events. The wide aggregates and their joins were most of the fold's cost and made it spill;
# over the twins only, the fold is several times faster and fits memory limits it ran out of before.
# The statement is written in the SQL both engines parse (``min_by``, ``hash``: 32 bits in Spark,
# so more candidates and the same result; explicit ``GROUP BY`` columns): each engine runs its
# rendering of this one text (``render.py``).
_FOLD_TEMPLATE = """
WITH id_twins AS (
    SELECT {ids} AS h FROM _events
    GROUP BY {ids} HAVING count(*) > 1
), ids AS (
    SELECT source, event_id, min_by(content_sha256, pos) AS id_first, min(pos) AS id_pos
    FROM _events WHERE {ids} IN (SELECT h FROM id_twins) GROUP BY source, event_id
), seq_twins AS (
    SELECT {seqs} AS h FROM _events
    GROUP BY {seqs} HAVING count(*) > 1
), seqs AS (
    SELECT source, source_seq, min_by(content_sha256, pos) AS seq_first
    FROM _events WHERE {seqs} IN (SELECT h FROM seq_twins) GROUP BY source, source_seq
), joined AS (
    SELECT e.pos, e.entity, e.key, e.version, e.content_sha256, e.image_sha256,
        coalesce(r1.content_sha256, CASE WHEN e.pos <> i.id_pos THEN i.id_first END) AS known_id,
        coalesce(r2.content_sha256, CASE WHEN q.seq_first <> e.content_sha256 THEN q.seq_first END)
            AS known_seq,
        c.version AS cv, c.image_sha256 = e.image_sha256 AS same_image
    FROM _events e
    LEFT JOIN ids i ON i.source = e.source AND i.event_id = e.event_id
    LEFT JOIN seqs q ON q.source = e.source AND q.source_seq = e.source_seq
    LEFT JOIN _registry r1 ON r1.source = e.source AND r1.event_id = e.event_id
    LEFT JOIN _registry r2 ON r2.source = e.source AND r2.source_seq = e.source_seq
    LEFT JOIN _committed c ON c.entity = e.entity AND c.key = e.key
), ruled AS (
    SELECT pos, entity, key, version, image_sha256, cv, same_image,
        CASE WHEN known_id IS NOT NULL AND known_id <> content_sha256 THEN $id_conflict
             WHEN known_seq IS NOT NULL AND known_seq <> content_sha256 THEN $seq_conflict END AS rule0,
        known_id IS NOT NULL AS dup_id
    FROM joined
), fenced AS MATERIALIZED (
    SELECT *, rule0 IS NULL AND NOT dup_id AS fresh,
        rule0 IS NULL AND NOT dup_id AND (cv IS NULL OR version > cv) AS above
    FROM ruled
), slot_twins AS (
    SELECT {slots} AS h FROM _events
    GROUP BY {slots} HAVING count(*) > 1
), slots AS (
    SELECT entity, key, version, min(pos) AS slot_pos, min_by(image_sha256, pos) AS slot_image
    FROM fenced WHERE above AND {slots} IN (SELECT h FROM slot_twins)
    GROUP BY entity, key, version
), outcomes AS MATERIALIZED (
    SELECT f.pos, f.entity, f.key, f.version, f.rule0, f.dup_id,
        CASE WHEN f.rule0 IS NOT NULL THEN $violation
             WHEN f.dup_id THEN $duplicate
             WHEN f.fresh AND f.version < f.cv THEN $stale
             WHEN f.fresh AND f.version = f.cv AND f.same_image THEN $duplicate
             WHEN f.fresh AND f.version = f.cv THEN $violation
             WHEN s.slot_pos IS NULL OR f.pos = s.slot_pos THEN $accepted
             WHEN f.image_sha256 = s.slot_image THEN $duplicate
             ELSE $violation END AS outcome
    FROM fenced f
    LEFT JOIN slots s ON s.entity = f.entity AND s.key = f.key AND s.version = f.version
), top_twins AS (
    SELECT {tops} AS h FROM _events
    GROUP BY {tops} HAVING count(*) > 1
), tops AS (
    SELECT entity, key, max(version) AS top FROM outcomes
    WHERE outcome = $accepted AND {tops} IN (SELECT h FROM top_twins) GROUP BY entity, key
)
SELECT o.pos, o.outcome,
    CASE WHEN o.outcome = $violation AND o.rule0 IS NULL THEN $equal_conflict ELSE o.rule0 END AS rule,
    coalesce(o.outcome = $accepted AND (t.top IS NULL OR o.version = t.top), false) AS winner,
    NOT o.dup_id AS new_id
FROM outcomes o LEFT JOIN tops t ON t.entity = o.entity AND t.key = o.key"""

# Each twin filter's group key, in the order of the statement.
TWIN_KEYS = {
    "ids": "source, event_id",
    "seqs": "source, source_seq",
    "slots": "entity, key, version",
    "tops": "entity, key",
}


def fold_statement(bucket: str = "hash({})") -> str:
    """The fold statement with ``bucket`` (an SQL expression around ``{}``, the group key's
    columns) as the twin filters' bucket: 64-bit hashes in production; tests pass a coarse one."""
    return _FOLD_TEMPLATE.format(**{name: bucket.format(key) for name, key in TWIN_KEYS.items()})


FOLD_SQL = fold_statement()


FOLD_PARAMS = {
    "id_conflict": Violation.EVENT_ID_CONFLICT.value,
    "seq_conflict": Violation.SOURCE_SEQ_CONFLICT.value,
    "equal_conflict": Violation.EQUAL_VERSION_CONFLICT.value,
    "violation": Outcome.VIOLATION.value,
    "duplicate": Outcome.DUPLICATE.value,
    "stale": Outcome.STALE.value,
    "accepted": Outcome.ACCEPTED.value,
}
