"""The fold of one load date: classify every valid event and pick each key's winner.

:func:`fold_reference` is a small sequential fold over Python values: the contract and the
oracle. Production folds a load date set-based in the warehouse (``storage/apply/fold_sql.py``); a
property test there proves the SQL equals this oracle on every input, conflicts included.

Rules, applied in this order to each event of the load date (delivery order = ``pos``):
1. ``(source, event_id)`` seen before (committed, or earlier in the load date) with other content
   -> EVENT_ID_CONFLICT; the same ``(source, source_seq)`` with other content -> SOURCE_SEQ_CONFLICT.
2. ``event_id`` seen before with identical content -> duplicate.
3. Version below the key's committed version -> stale (the fence; never applied).
4. Version equal to the committed version: identical image -> duplicate, else EQUAL_VERSION_CONFLICT.
5. Above it: the first event of each (key, version) is accepted; a later one with the same image is
   a duplicate, with another image an EQUAL_VERSION_CONFLICT.
The winner of a key is its accepted event with the highest version.
Any violation blocks the load date; the classification is still reported for evidence.
An event whose ``(source, event_id)`` is neither registered nor carried by an earlier event of the
load date carries a new id (``new_ids``): the registry gains it, with this event's source_seq and
content, when the load date is applied.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from replay_assets.core.errors import Violation


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "skipped_duplicate"
    STALE = "skipped_stale"
    VIOLATION = "violation"


@dataclass(frozen=True)
class FoldInput:
    """One valid event as the fold sees it; ``pos`` is its place in the load date's order."""

    pos: int
    source: str
    event_id: str
    source_seq: int
    entity: str
    key: str
    version: int
    content_sha256: str
    image_sha256: str


@dataclass(frozen=True)
class Committed:
    version: int
    image_sha256: str


@dataclass(frozen=True)
class Classified:
    outcome: Outcome
    rule: Violation | None = None


@dataclass(frozen=True)
class FoldResult:
    classified: dict[int, Classified]
    winners: frozenset[int]
    new_ids: frozenset[int]

    @property
    def blocked(self) -> bool:
        return any(c.outcome is Outcome.VIOLATION for c in self.classified.values())


def fold_reference(
    events: Iterable[FoldInput],
    committed: Mapping[tuple[str, str], Committed],
    registry: Mapping[tuple[str, str], tuple[int, str]],
) -> FoldResult:
    """Sequential oracle. ``registry`` maps (source, event_id) to (source_seq, content_sha256)."""
    by_seq = {(src, seq): content for (src, _), (seq, content) in registry.items()}
    first_id: dict[tuple[str, str], str] = {}
    first_seq: dict[tuple[str, int], str] = {}
    first_version: dict[tuple[str, str, int], tuple[int, str]] = {}
    classified: dict[int, Classified] = {}
    new_ids: set[int] = set()
    for ev in sorted(events, key=lambda e: e.pos):
        id_key, seq_key = (ev.source, ev.event_id), (ev.source, ev.source_seq)
        if id_key not in registry and id_key not in first_id:
            new_ids.add(ev.pos)
        known_id = registry[id_key][1] if id_key in registry else first_id.get(id_key)
        known_seq = by_seq.get(seq_key, first_seq.get(seq_key))
        first_id.setdefault(id_key, ev.content_sha256)
        first_seq.setdefault(seq_key, ev.content_sha256)
        if known_id is not None and known_id != ev.content_sha256:
            classified[ev.pos] = Classified(Outcome.VIOLATION, Violation.EVENT_ID_CONFLICT)
        elif known_seq is not None and known_seq != ev.content_sha256:
            classified[ev.pos] = Classified(Outcome.VIOLATION, Violation.SOURCE_SEQ_CONFLICT)
        elif known_id is not None:
            classified[ev.pos] = Classified(Outcome.DUPLICATE)
        else:
            classified[ev.pos] = _fence(ev, committed.get((ev.entity, ev.key)), first_version)
    return FoldResult(classified, frozenset(_winners(events, classified)), frozenset(new_ids))


def _fence(
    ev: FoldInput,
    current: Committed | None,
    first_version: dict[tuple[str, str, int], tuple[int, str]],
) -> Classified:
    if current is not None and ev.version < current.version:
        return Classified(Outcome.STALE)
    if current is not None and ev.version == current.version:
        same = ev.image_sha256 == current.image_sha256
        return Classified(Outcome.DUPLICATE) if same else _conflict()
    slot = (ev.entity, ev.key, ev.version)
    if slot not in first_version:
        first_version[slot] = (ev.pos, ev.image_sha256)
        return Classified(Outcome.ACCEPTED)
    return Classified(Outcome.DUPLICATE) if first_version[slot][1] == ev.image_sha256 else _conflict()


def _conflict() -> Classified:
    return Classified(Outcome.VIOLATION, Violation.EQUAL_VERSION_CONFLICT)


def _winners(events: Iterable[FoldInput], classified: Mapping[int, Classified]) -> set[int]:
    best: dict[tuple[str, str], FoldInput] = {}
    for ev in events:
        if classified[ev.pos].outcome is Outcome.ACCEPTED:
            held = best.get((ev.entity, ev.key))
            if held is None or ev.version > held.version:
                best[(ev.entity, ev.key)] = ev
    return {ev.pos for ev in best.values()}
