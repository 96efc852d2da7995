"""Whether what a load date landed adds up, read back from the warehouse once the landing
committed: the raw receipts' reconciliation check."""

from __future__ import annotations

from replay_assets.core.receipts import ReceiptReconciliation, reconcile_receipts
from replay_assets.usecases.context import Pipeline


def reconcile_landed(pipeline: Pipeline, load_date: str) -> ReceiptReconciliation:
    """Count the date's landed rows table by table and judge them (a read; it writes nothing).

    It reads under the writer lock, not through the reader: while another process writes, the
    reader answers from the published copy, which keeps no landed rows, and a check must count
    the warehouse itself."""
    with pipeline.store.connect() as unit:
        return reconcile_receipts(unit.landing.landed_counts(load_date))
