"""The statements of applying a load date, over the views the fold leaves (``_folded``: the
events with their outcome and winner flag; ``_committed``: each touched key's state before)."""

from __future__ import annotations

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.plan import DatePlan
from replay_assets.storage.rules.tables import BUSINESS_FIELDS

_ROW = "version, source_seq, image_sha256, $day AS load_date"
# The winners as history rows of the load date ``$day``, by table: a delete is a tombstone (no
# image, status ``deleted``). Columns in the table's order, named as the table names them.
HISTORY_ROWS = {
    "order_history": f"""
    SELECT order_id, line_no,
        {", ".join(f"CASE WHEN op = 'delete' THEN NULL ELSE {c} END AS {c}" for c in BUSINESS_FIELDS)},
        CASE WHEN op = 'delete' THEN 'deleted' ELSE status END AS status, {_ROW}
    FROM _folded WHERE winner AND entity = 'order_line'""",
    "customer_history": f"""
    SELECT customer_id,
        CASE WHEN op = 'delete' THEN NULL ELSE name END AS name,
        CASE WHEN op = 'delete' THEN NULL ELSE segment END AS segment,
        CASE WHEN op = 'delete' THEN 'deleted' ELSE 'active' END AS status, {_ROW}
    FROM _folded WHERE winner AND entity = 'customer'""",
}
# The (business_date, store_id) groups the winners leave (their previous images) and join.
AFFECTED_GROUPS = """
    SELECT DISTINCT business_date, store_id FROM (
        SELECT business_date, store_id FROM _folded
        WHERE winner AND entity = 'order_line' AND op = 'upsert'
        UNION ALL
        SELECT c.business_date, c.store_id FROM _committed c
        SEMI JOIN (SELECT entity, key FROM _folded WHERE winner) w ON w.entity = c.entity AND w.key = c.key
        WHERE c.entity = 'order_line') g
    WHERE business_date IS NOT NULL AND store_id IS NOT NULL"""
GROUP_DATES = "SELECT DISTINCT business_date FROM _groups ORDER BY business_date"


def require_all_landed(plan: DatePlan, landed: set[str]) -> None:
    """Refuses to apply a load date before every batch of it is landed."""
    missing = [b.batch_id for b in plan.batches if b.batch_id not in landed]
    if missing:
        raise ReplayError(
            ErrorCode.NOT_READY,
            f"batch {missing[0]} of load date {plan.load_date} is not landed: materialize raw_receipts first",
        )
