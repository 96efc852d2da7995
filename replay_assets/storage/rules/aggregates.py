"""Daily aggregates over the current state, the contract of ``core.aggregate.aggregate_images``."""

from __future__ import annotations

# the state as of the certified pointer: the latest tables when they hold it (no history after
# the pointer; ``rules/latest.py``), else the history macro. Written in the SQL both engines parse
# (``array_contains``, ``STRING``, named groups), so each renders the same statement.
SQL_AGGREGATES = """
    SELECT store_id, CAST(business_date AS STRING) AS business_date,
           count(DISTINCT order_id) AS order_count, count(*) AS line_count, sum(quantity) AS units,
           sum(amount_minor) AS amount_minor, sum(cost_minor) AS cost_minor,
           sum(amount_minor) - sum(cost_minor) AS gross_profit_minor
    FROM {state} WHERE status = 'active' AND array_contains($dates, CAST(business_date AS STRING))
    GROUP BY store_id, CAST(business_date AS STRING) ORDER BY store_id, business_date"""
