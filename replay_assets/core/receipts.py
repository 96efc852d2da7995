"""Whether a landed load date's rows add up: per delivered file, the events its manifest
declares against what the warehouse kept of them, each counted on its own. Pure.

Landing keeps every non-blank line as one receipt and decides it exactly once: a source event
(staged for the fold; a duplicate inside a batch is staged too and counted as skipped when the
date is applied), a rejected event with its reason, or a line the schema gate refused. So for
every file ``declared = receipts = staged + rejected + refused``; a row lost or added anywhere
breaks one side of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_NAMED = 3  # unbalanced files named in a summary; the count says how many more


@dataclass(frozen=True)
class FileCounts:
    """What the warehouse holds for one delivered file of a batch. ``source_file`` is None for a
    batch that delivered no file (an empty delivery): it only says the batch is there."""

    batch_id: str
    source_file: str | None
    declared: int
    receipts: int
    staged: int
    rejected: int
    refused: int

    @property
    def decided(self) -> int:
        """The lines landing decided: staged, rejected or refused."""
        return self.staged + self.rejected + self.refused

    @property
    def adds_up(self) -> bool:
        return self.declared == self.receipts == self.decided

    def describe(self) -> str:
        """Where and by how much it does not add up (identifiers and counts, never a row)."""
        return (
            f"batch {self.batch_id} file {self.source_file}: manifest declares {self.declared} events, "
            f"{self.receipts} receipts, {self.staged} staged + {self.rejected} rejected + "
            f"{self.refused} refused = {self.decided}"
        )


@dataclass(frozen=True)
class LandedCounts:
    """A load date's landed files as the warehouse holds them. ``pruned``: retention removed the
    date's receipts and staged events (what stays: each file's declared count, rejections)."""

    load_date: str
    files: tuple[FileCounts, ...]
    pruned: bool = False


@dataclass(frozen=True)
class ReceiptReconciliation:
    load_date: str
    batches: int
    files: int
    declared: int
    receipts: int
    staged: int
    rejected: int
    refused: int
    unbalanced: tuple[FileCounts, ...]
    pruned: bool

    @property
    def passed(self) -> bool:
        return not self.unbalanced

    def summary(self) -> str:
        """One line for the operator: what adds up, or which batches do not and their counts."""
        if self.pruned:
            return (
                f"{self.load_date} was pruned by retention: its {self.declared} declared events "
                "are kept as counts, its receipts and staged events are gone"
            )
        if self.passed:
            return (
                f"{self.files} files of {self.batches} batches add up: {self.declared} declared events = "
                f"{self.staged} staged + {self.rejected} rejected + {self.refused} refused"
            )
        named = "; ".join(f.describe() for f in self.unbalanced[:MAX_NAMED])
        more = len(self.unbalanced) - MAX_NAMED
        tail = f" (and {more} more)" if more > 0 else ""
        return f"{len(self.unbalanced)} files do not add up: {named}{tail}"


def reconcile_receipts(counts: LandedCounts) -> ReceiptReconciliation:
    """The load date's verdict. A pruned date is judged on nothing it no longer keeps: it
    passes, saying so."""
    files = [f for f in counts.files if f.source_file is not None]
    unbalanced = () if counts.pruned else tuple(f for f in files if not f.adds_up)
    return ReceiptReconciliation(
        load_date=counts.load_date,
        batches=len({f.batch_id for f in counts.files}),
        files=len(files),
        declared=_sum(files, "declared"),
        receipts=_sum(files, "receipts"),
        staged=_sum(files, "staged"),
        rejected=_sum(files, "rejected"),
        refused=_sum(files, "refused"),
        unbalanced=unbalanced,
        pruned=counts.pruned,
    )


def _sum(files: Sequence[FileCounts], name: str) -> int:
    return sum(int(getattr(f, name)) for f in files)
