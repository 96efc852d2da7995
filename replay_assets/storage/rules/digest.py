"""The state's content hash and controls kept by change, the arithmetic both engines share: what
the hash covers (per entity its history table, the hashed columns and the key; the 64-bit limbs
of a row's sha256 that are summed), the sums, and how a load date's changes move them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from replay_assets.core.aggregate import Controls
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.storage.rules import by_change
from replay_assets.storage.rules.sql import Sql
from replay_assets.storage.rules.tables import CUSTOMER_COLUMNS, ORDER_COLUMNS

# entity -> (history table, hashed columns, key)
ENTITIES = {
    "orders": ("order_history", (*ORDER_COLUMNS, "version"), ("order_id", "line_no")),
    "customers": ("customer_history", (*CUSTOMER_COLUMNS, "version"), ("customer_id",)),
}
LIMBS = 4
Sums = tuple[int, ...]  # rows, then one exact sum per 64-bit limb of the rows' sha256


@dataclass(frozen=True)
class StateDigest:
    sums: dict[str, Sums]  # entity -> rows and limb sums

    @property
    def content_sha256(self) -> str:
        return sha256_text(canonical_json({e: [str(v) for v in s] for e, s in sorted(self.sums.items())}))

    @property
    def rows(self) -> int:
        return sum(s[0] for s in self.sums.values())

    def plus(self, other: StateDigest, sign: int = 1) -> StateDigest:
        return StateDigest(
            {
                e: tuple(a + sign * b for a, b in zip(self.sums[e], other.sums[e], strict=True))
                for e in ENTITIES
            }
        )


EMPTY = StateDigest({e: (0,) * (LIMBS + 1) for e in ENTITIES})


def shifted(base: Controls, after: tuple[int, ...], before: tuple[int, ...]) -> Controls:
    return Controls(*(b + a - c for b, a, c in zip(base.as_tuple(), after, before, strict=True)))


def combine_by_change(
    base: Controls,
    *,
    written: tuple[int, ...],
    replaced: tuple[int, ...],
    after: tuple[int, ...],
    before: tuple[int, ...],
) -> tuple[Controls, Controls]:
    """The controls by change, line by line and order by order, from ``base`` and the sums (active
    lines, distinct orders, units, amount, cost, profit) of the rows written, the rows they
    replaced, and every line of the touched orders after and before."""
    by_order = shifted(base, after, before)
    # distinct orders is not a sum over lines: it moves by the touched orders' before and after
    plus = (*written[:1], after[1], *written[2:])
    minus = (*replaced[:1], before[1], *replaced[2:])
    by_line = shifted(base, plus, minus)
    return by_line, by_order


ZERO = Controls(*([0] * 6))


class DigestReads(Protocol):
    """What ``base_of`` reads of a certified load date, on any engine."""

    def stored_sums(self, day: str) -> StateDigest | None: ...
    def stored_controls(self, day: str) -> Controls | None: ...
    def intact(self, day: str, sums: StateDigest) -> bool: ...
    def full_sums(self, day: str) -> StateDigest: ...
    def recomputed_controls(self, day: str) -> Controls: ...


def base_of(before: str | None, reads: DigestReads) -> tuple[StateDigest, Controls]:
    """The sums and controls of the state as of ``before`` (the applied date before the one being
    certified) that a date by change builds on: the stored ones while they are intact (their
    sums hash to the snapshot's content hash, and the snapshot row and publication are what the
    journal recorded the date's application leaving), else recomputed from the whole state, so a
    tampered or drifted record is never carried forward (the audit flags it SUSPECT)."""
    if before is None:
        return EMPTY, ZERO
    sums, controls = reads.stored_sums(before), reads.stored_controls(before)
    if sums is not None and controls is not None and reads.intact(before, sums):
        return sums, controls
    return reads.full_sums(before), reads.recomputed_controls(before)


def target_digest_of(state_digest: str, snapshot: Sequence[object] | None, publication: str | None) -> str:
    """What applying a load date left in the target: the state, its snapshot record (its values
    but the load date, in column order) and its latest publication's content hash."""
    return sha256_text(canonical_json([state_digest, list(snapshot) if snapshot else None, publication]))


# An engine's multiset hash of the rows a statement selects for a day: (statement, entity, day)
# -> the row count and the sums of each row hash's limbs.
Hashing = Callable[[str, str, str], Sums]


def change_by(hashing: Hashing, day: str, first: bool = False, *, from_latest: bool = False) -> StateDigest:
    """What ``day`` changed: the sums of the rows it wrote minus those of the rows they replaced
    (none when ``first``: no history before it)."""
    written = StateDigest({e: hashing(by_change.written(t), e, day) for e, (t, _c, _k) in ENTITIES.items()})
    if first:
        return written
    replaced = StateDigest(
        {e: hashing(by_change.replaced(t, k, from_latest), e, day) for e, (t, _c, k) in ENTITIES.items()}
    )
    return written.plus(replaced, sign=-1)


def full_by(hashing: Hashing, day: str) -> StateDigest:
    """The sums over the whole state as of ``day`` (the audit, and a date certified before v7)."""
    return StateDigest(
        {e: hashing(by_change.as_of(t, k, "load_date <= $day"), e, day) for e, (t, _c, k) in ENTITIES.items()}
    )


def controls_of(sql: Sql, rows_sql: str, day: str) -> tuple[int, ...]:
    """Active lines, distinct orders with an active line, units, amount, cost, profit."""
    found = sql.rows(by_change.controls(rows_sql), day=day)
    return tuple(int(v) for v in found[0].values())


def controls_by_change(
    sql: Sql, day: str, base: Controls, first: bool = False, *, from_latest: bool = False
) -> tuple[Controls, Controls]:
    """The controls as of ``day`` from ``base`` (the previous applied date's), two ways: line by
    line, and order by order (``storage/apply/state_digest.py`` says how). Equal unless the
    bookkeeping is wrong.
    ``first``: no history before ``day``, so nothing was replaced and no order had lines before.
    ``from_latest``: the latest tables hold the state before ``day`` (read there, not history)."""
    nothing: tuple[int, ...] = (0,) * 6
    written = controls_of(sql, by_change.written("order_history"), day)
    if first:
        return combine_by_change(base, written=written, replaced=nothing, after=written, before=nothing)
    after = controls_of(sql, by_change.lines_of_touched(after=True, from_latest=from_latest), day)
    before = controls_of(sql, by_change.lines_of_touched(after=False, from_latest=from_latest), day)
    key = ("order_id", "line_no")
    replaced = controls_of(sql, by_change.replaced("order_history", key, from_latest), day)
    return combine_by_change(base, written=written, replaced=replaced, after=after, before=before)
