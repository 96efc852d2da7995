"""What consumers read, on both engines: the consumer tables an export serves (an allow-list of
names, never a name pasted from input), those the published copy serves too, the as-of reads and
the reconciliation report."""

from __future__ import annotations

TABLES = {
    "current_orders": "SELECT * FROM current_orders ORDER BY order_id, line_no",
    "current_customers": "SELECT * FROM current_customers ORDER BY customer_id",
    "daily_aggregates": "SELECT * FROM daily_aggregates ORDER BY business_date, store_id",
    "publications": "SELECT * FROM publications ORDER BY asset, partition_key, version",
    "raw_receipts": "SELECT * EXCLUDE (payload) FROM raw_receipts ORDER BY load_date, batch_id, line_number",
    "rejected_events": "SELECT * FROM rejected_events ORDER BY load_date, batch_id, line_number",
    "reconciliation": "SELECT * FROM reconciliation ORDER BY load_date, batch_id",
    "source_records": "SELECT * EXCLUDE (envelope) FROM source_records "
    "ORDER BY load_date, batch_id, record_number",
    "upcast_events": "SELECT * FROM upcast_events ORDER BY load_date, batch_id, source_file, schema_version",
    "partition_status": "SELECT * FROM partition_status ORDER BY asset, partition_key",
}
# what the published copy also serves while a writer holds the warehouse
PUBLISHED = frozenset(
    {
        "current_orders",
        "current_customers",
        "daily_aggregates",
        "publications",
        "reconciliation",
        "partition_status",
    }
)
AS_OF = {
    "current_orders": "SELECT * FROM orders_as_of(?) ORDER BY order_id, line_no",
    "current_customers": "SELECT * FROM customers_as_of(?) ORDER BY customer_id",
}

RECONCILE_SQL = """
    SELECT load_date, sum(source_events) AS source_events, sum(accepted) AS accepted,
           sum(rejected) AS rejected, sum(skipped_duplicate) AS skipped_duplicate,
           sum(skipped_stale) AS skipped_stale, string_agg(DISTINCT status, ',') AS statuses,
           bool_and(status IN ('BLOCKED', 'SKIPPED') OR source_events = accepted + rejected
                    + skipped_duplicate + skipped_stale) AS adds_up
    FROM reconciliation GROUP BY load_date ORDER BY load_date"""

# As-of access: the consumer-typed history rows each certified load date inside the
# horizon wrote (``history/<entity>/load_date=D.parquet``, rewritten when D is restated) and the
# state as of the last pruned date (``base.parquet``: history up to it holds one row per key).
# ``orders_as_of(d)`` takes each key's newest row up to ``d``; behind the horizon it fails.
AS_OF_HISTORY = {
    "orders": (
        "order_history",
        "orders_as_of",
        """order_id, line_no, store_id, customer_id, product_id,
        CAST(business_date AS DATE) AS business_date, quantity, amount_minor, cost_minor, status,
        version, source_seq, CAST(load_date AS DATE) AS load_date""",
        "order_id, line_no",
    ),
    "customers": (
        "customer_history",
        "customers_as_of",
        "customer_id, name, segment, status, version, source_seq, CAST(load_date AS DATE) AS load_date",
        "customer_id",
    ),
}
# entity -> (consumer view, history table, as-of macro)
ENTITIES = {
    "orders": ("current_orders", "order_history", "orders_as_of"),
    "customers": ("current_customers", "customer_history", "customers_as_of"),
}
