"""Which batch a blocked load date is blamed on, in the words ``status`` shows and ``resolve``
reads (a late delivery on a sealed load date). Pure.

Re-applying a sealed chain D..latest for a late delivery can block a later date of the chain
(e.g. the late batch reuses, with other content, an event id a later date delivered). That later
date's input passed when it was applied; what changed is the late input of the chain. So the
batch that introduced the conflict is the one delivered later, on the earlier load date: the
late batch, never the later date's healthy batch. Naming it lets the operator skip it or
supersede it with a corrected delivery.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay_assets.core.plan import DatePlan, Delivery

CONFLICTS = " conflicts with load date "


def names_batch(reason: str, batch_id: str) -> bool:
    """Whether a load date's reason blames ``batch_id`` (``batch ID`` then a space or a colon)."""
    return any(f"batch {batch_id}{end}" in reason for end in (" ", ":"))


def blames_late(reason: str, batch_id: str) -> bool:
    """Whether ``reason`` (:func:`late_conflict_reason`) names ``batch_id`` as a late culprit:
    only the names before the conflict count, never a batch its quoted detail mentions."""
    named, conflicts, _ = reason.partition(CONFLICTS)
    return bool(conflicts) and f"batch {batch_id} of " in named


def late_culprits(chain: Sequence[DatePlan], blocked_day: str) -> list[Delivery]:
    """The late batches of the chain up to the blocked date: the input its dates did not have
    when they were applied, and so what a conflict found while re-applying them comes from."""
    return [d for plan in chain if plan.load_date <= blocked_day for d in plan.late]


def late_conflict_reason(chain: Sequence[DatePlan], blocked_day: str, detail: str) -> str:
    """Why the late delivery's date is blocked when re-applying ``chain`` stopped at
    ``blocked_day`` with ``detail``: the late batches are named first, then the way out."""
    first, last = chain[0].load_date, chain[-1].load_date
    culprits = late_culprits(chain, blocked_day)
    if not culprits:  # none on record: the chain's own words
        return (
            f"re-applying {first}..{last} for its late delivery: load date {blocked_day} is blocked: {detail}"
        )
    named = " and ".join(
        f"batch {d.batch_id} of {d.source}, delivered late for {d.load_date}," for d in culprits
    )
    skips = "; ".join(f"resolve --batch-id {d.batch_id} --action skip" for d in culprits)
    it = "it" if len(culprits) == 1 else "each"
    return (
        f"{named}{CONFLICTS}{blocked_day}, which later dates built on: {detail}; "
        f"skip {it} ({skips}) or deliver a corrected batch that supersedes {it}, "
        f"then backfill --from {first} --to {last}"
    )
