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

# The same aggregates by another path, for the gate's recomputation: each order's lines of a
# store and date summed first, then the orders. Its grouping and counting differ from the
# line-by-line statement's, so a defect in either shows as a difference (both share the filter
# on status and dates, and read the same state: no history scan on the daily path).
SQL_AGGREGATES_BY_ORDER = """
    SELECT store_id, business_date, count(*) AS order_count, sum(lines) AS line_count,
           sum(units) AS units, sum(amount) AS amount_minor, sum(cost) AS cost_minor,
           sum(amount) - sum(cost) AS gross_profit_minor
    FROM (SELECT order_id, store_id, CAST(business_date AS STRING) AS business_date, count(*) AS lines,
                 sum(quantity) AS units, sum(amount_minor) AS amount, sum(cost_minor) AS cost
          FROM {state} WHERE status = 'active' AND array_contains($dates, CAST(business_date AS STRING))
          GROUP BY order_id, store_id, CAST(business_date AS STRING)) orders
    GROUP BY store_id, business_date ORDER BY store_id, business_date"""

# the order lines whose state as of $as_of may be on one of $dates, each key's newest row of
# ``{history}`` up to $as_of: only keys with some row on those dates can be (the state's own row
# is one), so the window ranks just those keys. Sail parses no QUALIFY: a ranked subquery.
SQL_LINES_ON_DATES = """(
    SELECT * FROM (
      SELECT h.*, row_number() OVER (PARTITION BY h.order_id, h.line_no ORDER BY h.load_date DESC) AS newest
      FROM {history} h SEMI JOIN (
          SELECT order_id, line_no FROM {history}
          WHERE load_date <= $as_of AND array_contains($dates, CAST(business_date AS STRING))) k
        ON h.order_id = k.order_id AND h.line_no = k.line_no
      WHERE h.load_date <= $as_of) ranked
    WHERE newest = 1) lines"""


def candidate_aggregates(state: str | None, history: str) -> str:
    """The candidate aggregates of $dates as of $as_of: over ``state`` (the latest tables, when
    they hold the state as of $as_of; the statement then takes no $as_of) or else over the lines
    of those dates in ``history``. One statement, so no order line leaves the engine."""
    return SQL_AGGREGATES.format(state=state or SQL_LINES_ON_DATES.format(history=history))
