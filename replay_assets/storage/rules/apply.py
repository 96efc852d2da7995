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
# The registry rows sharing an event id or a source_seq with the load date's events (``_events``).
REGISTRY_ROWS = """
    SELECT source, event_id, source_seq, content_sha256 FROM event_registry r
    SEMI JOIN _events i ON i.source = r.source AND i.event_id = r.event_id WHERE r.load_date < $day
    UNION
    SELECT source, event_id, source_seq, content_sha256 FROM event_registry r
    SEMI JOIN _events i ON i.source = r.source AND i.source_seq = r.source_seq
    WHERE r.load_date < $day"""
_ORDER_KEY = "'[\"' || h.order_id || '\",' || CAST(h.line_no AS VARCHAR) || ']'"
_CUSTOMER_KEY = "'[\"' || h.customer_id || '\"]'"


def committed_rows(from_latest: bool) -> str:
    """Each touched key's state before the load date ``$day``: from the latest tables when they
    hold it (a new date), else each key's newest history row before the date (a verification or
    a date with later ones applied)."""
    orders, customers = (
        ("order_latest", "customer_latest") if from_latest else ("order_history", "customer_history")
    )
    newest = (
        ""
        if from_latest
        else "WHERE h.load_date < $day QUALIFY row_number() OVER (PARTITION BY {}"
        " ORDER BY h.load_date DESC) = 1"
    )
    return f"""
        SELECT 'order_line' AS entity, {_ORDER_KEY} AS key, h.version, h.image_sha256, h.business_date,
            h.store_id
        FROM {orders} h SEMI JOIN _events k
          ON k.entity = 'order_line' AND h.order_id = k.order_id AND h.line_no = k.line_no
        {newest.format("h.order_id, h.line_no")}
        UNION ALL
        SELECT 'customer' AS entity, {_CUSTOMER_KEY} AS key, h.version, h.image_sha256,
            CAST(NULL AS VARCHAR) AS business_date, CAST(NULL AS VARCHAR) AS store_id
        FROM {customers} h SEMI JOIN _events k
          ON k.entity = 'customer' AND h.customer_id = k.customer_id
        {newest.format("h.customer_id")}"""


def require_all_landed(plan: DatePlan, landed: set[str]) -> None:
    """Refuses to apply a load date before every batch of it is landed."""
    missing = [b.batch_id for b in plan.batches if b.batch_id not in landed]
    if missing:
        raise ReplayError(
            ErrorCode.NOT_READY,
            f"batch {missing[0]} of load date {plan.load_date} is not landed: materialize raw_receipts first",
        )
