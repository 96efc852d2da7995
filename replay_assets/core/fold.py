"""The fold of one load date (SPEC 3.1-3.5): classify every valid event and pick each key's winner.

Two implementations of one contract:
- :func:`fold_reference` is a small sequential fold over Python values: the oracle;
- :func:`fold_frame` is the set-based polars fold used on real volumes.
Property tests prove they agree on every input.

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
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl

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

    @property
    def blocked(self) -> bool:
        return any(c.outcome is Outcome.VIOLATION for c in self.classified.values())


EVENT_SCHEMA = pl.Schema(
    {
        "pos": pl.Int64,
        "source": pl.String,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "entity": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "content_sha256": pl.String,
        "image_sha256": pl.String,
    }
)
COMMITTED_SCHEMA = pl.Schema(
    {
        "entity": pl.String,
        "key": pl.String,
        "version": pl.Int64,
        "image_sha256": pl.String,
    }
)
REGISTRY_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "event_id": pl.String,
        "source_seq": pl.Int64,
        "content_sha256": pl.String,
    }
)


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
    for ev in sorted(events, key=lambda e: e.pos):
        id_key, seq_key = (ev.source, ev.event_id), (ev.source, ev.source_seq)
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
    return FoldResult(classified, frozenset(_winners(events, classified)))


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


def fold_frame(events: pl.DataFrame, committed: pl.DataFrame, registry: pl.DataFrame) -> pl.DataFrame:
    """Set-based fold with the same contract as :func:`fold_reference`.

    ``events`` has EVENT_SCHEMA columns, ``committed`` COMMITTED_SCHEMA (only keys the events
    touch are needed), ``registry`` REGISTRY_SCHEMA (only ids and seqs the events touch are
    needed). Returns one row per event: ``pos, outcome, rule, winner``. Order-independent.
    """
    ev = events.lazy().with_columns(
        pl.col("content_sha256").sort_by("pos").first().over("source", "event_id").alias("id_first"),
        (pl.col("pos") == pl.col("pos").min().over("source", "event_id")).alias("is_first_id"),
        pl.col("content_sha256").sort_by("pos").first().over("source", "source_seq").alias("seq_first"),
    )
    reg = registry.lazy()
    ev = (
        ev.join(
            reg.select("source", "event_id", pl.col("content_sha256").alias("reg_id")),
            on=["source", "event_id"],
            how="left",
        )
        .join(
            reg.select("source", "source_seq", pl.col("content_sha256").alias("reg_seq")),
            on=["source", "source_seq"],
            how="left",
        )
        .join(
            committed.lazy().select(
                "entity", "key", pl.col("version").alias("cv"), pl.col("image_sha256").alias("c_image")
            ),
            on=["entity", "key"],
            how="left",
        )
    )
    known_id = pl.coalesce("reg_id", pl.when(~pl.col("is_first_id")).then(pl.col("id_first")))
    earlier_seq = pl.col("seq_first") != pl.col("content_sha256")
    known_seq = pl.coalesce("reg_seq", pl.when(earlier_seq).then(pl.col("seq_first")))
    content = pl.col("content_sha256")
    ev = ev.with_columns(
        pl.when(known_id.is_not_null() & (known_id != content))
        .then(pl.lit(str(Violation.EVENT_ID_CONFLICT)))
        .when(known_seq.is_not_null() & (known_seq != content))
        .then(pl.lit(str(Violation.SOURCE_SEQ_CONFLICT)))
        .alias("rule"),
        known_id.is_not_null().alias("dup_id"),
    )
    return _fence_frame(ev).collect()


def _fence_frame(ev: pl.LazyFrame) -> pl.LazyFrame:
    fresh = pl.col("rule").is_null() & ~pl.col("dup_id")
    above = fresh & (pl.col("cv").is_null() | (pl.col("version") > pl.col("cv")))
    slot = ("entity", "key", "version")
    first_pos = pl.col("pos").filter(above).min().over(*slot)
    first_image = pl.col("image_sha256").filter(above).sort_by(pl.col("pos").filter(above)).first()
    ev = ev.with_columns(first_pos.alias("slot_pos"), first_image.over(*slot).alias("slot_image"))
    equal = fresh & (pl.col("version") == pl.col("cv"))
    outcome = (
        pl.when(pl.col("rule").is_not_null())
        .then(pl.lit(Outcome.VIOLATION.value))
        .when(pl.col("dup_id"))
        .then(pl.lit(Outcome.DUPLICATE.value))
        .when(fresh & (pl.col("version") < pl.col("cv")))
        .then(pl.lit(Outcome.STALE.value))
        .when(equal & (pl.col("image_sha256") == pl.col("c_image")))
        .then(pl.lit(Outcome.DUPLICATE.value))
        .when(equal)
        .then(pl.lit(Outcome.VIOLATION.value))
        .when(pl.col("pos") == pl.col("slot_pos"))
        .then(pl.lit(Outcome.ACCEPTED.value))
        .when(pl.col("image_sha256") == pl.col("slot_image"))
        .then(pl.lit(Outcome.DUPLICATE.value))
        .otherwise(pl.lit(Outcome.VIOLATION.value))
    )
    conflict = pl.lit(str(Violation.EQUAL_VERSION_CONFLICT))
    ev = ev.with_columns(outcome.alias("outcome")).with_columns(
        pl.when((pl.col("outcome") == Outcome.VIOLATION.value) & pl.col("rule").is_null())
        .then(conflict)
        .otherwise(pl.col("rule"))
        .alias("rule")
    )
    accepted = pl.col("outcome") == Outcome.ACCEPTED.value
    top = pl.col("version").filter(accepted).max().over("entity", "key")
    return (
        ev.with_columns((accepted & (pl.col("version") == top)).alias("winner"))
        .select("pos", "outcome", "rule", "winner")
        .sort("pos")
    )


def frame_to_result(frame: pl.DataFrame) -> FoldResult:
    """Read :func:`fold_frame`'s output back as the oracle's value type (for comparison)."""
    classified = {
        row["pos"]: Classified(Outcome(row["outcome"]), Violation(row["rule"]) if row["rule"] else None)
        for row in frame.iter_rows(named=True)
    }
    winners = frozenset(frame.filter(pl.col("winner"))["pos"].to_list())
    return FoldResult(classified, winners)
