"""What the journal's executor and recovery share beside the port: an operation (its identity
and intent), the entry recorded for it, and ``Divert``. The entries' reads and moves are the
port's (``written_once.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replay_assets.storage.records import Entry as Entry
from replay_assets.storage.records import Operation as Operation

if TYPE_CHECKING:
    from replay_assets.storage.unit import WarehouseWriter


class Divert(Exception):
    """Raised by a mutation to replace itself: its transaction is rolled back and ``instead`` runs
    in a fresh one (a failed gate keeps only its candidate's evidence)."""

    def __init__(self, instead: Callable[[WarehouseWriter], tuple[dict[str, Any], str | None]]) -> None:
        super().__init__("divert")
        self.instead = instead
