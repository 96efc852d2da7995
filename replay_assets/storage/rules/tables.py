"""The warehouse's tables as both engines see them: column orders, the keys a newer row
supersedes an older one by, and the pointers' names."""

from __future__ import annotations

from replay_assets.core.events import CUSTOMER_IMAGE, ORDER_IMAGE

ORDER_COLUMNS = ORDER_IMAGE  # history/consumer column order is the image order
CUSTOMER_COLUMNS = (*CUSTOMER_IMAGE, "status")
BUSINESS_FIELDS = tuple(c for c in ORDER_IMAGE if c not in ("order_id", "line_no", "status"))
RECON_COLUMNS = ("batch_id", "source_events", "accepted", "rejected", "skipped_duplicate", "skipped_stale")
# a batch's landed rows, removed by a relanding (the delivered files stay in the landing area)
LANDED_TABLES = (
    "raw_receipts",
    "staged_events",
    "rejected_events",
    "batch_violations",
    "upcast_events",
    "source_records",
    "landed_files",
    "reconciliation",
    "manifests",
)
# the history tables and the key a newer row supersedes an older one by
HISTORY_KEYS = {"order_history": ("order_id", "line_no"), "customer_history": ("customer_id",)}
# what pruning a load date removes: the table and the rows it is stored in
PER_DATE = {
    "raw_receipts": "raw_receipts",
    "staged_events": "staged_events",
    "event_registry": "registry_rows",
}
PRUNED_THROUGH = "pruned_through"  # the pointer naming the newest pruned load date
