"""The row sets a load date's state digest and controls are kept from (cost by change), written
once in DuckDB's dialect for both engines: the rows ``$day`` wrote, the rows they replaced, each
key's row as of a date, every line of the orders ``$day`` touched before and after it, and the
controls of a set of order lines. Each is a ``SELECT`` with the one parameter ``$day``."""

from __future__ import annotations

from replay_assets.storage.rules.latest import LATEST

# active lines, distinct orders with an active line, units, amount, cost, profit of ``rows``
CONTROLS = """SELECT count(*) FILTER (WHERE status = 'active') AS lines,
    count(DISTINCT order_id) FILTER (WHERE status = 'active') AS orders,
    coalesce(sum(quantity) FILTER (WHERE status = 'active'), 0) AS units,
    coalesce(sum(amount_minor) FILTER (WHERE status = 'active'), 0) AS amount,
    coalesce(sum(cost_minor) FILTER (WHERE status = 'active'), 0) AS cost,
    coalesce(sum(amount_minor - cost_minor) FILTER (WHERE status = 'active'), 0) AS profit FROM rows"""
_TOUCHED = "SELECT DISTINCT order_id FROM order_history WHERE load_date = $day"
_WRITTEN_LINES = "SELECT order_id, line_no FROM order_history WHERE load_date = $day"
_LINE = ("order_id", "line_no")


def _on(key: tuple[str, ...], other: str) -> str:
    """A join's condition on ``key`` between ``h`` and ``other`` (Sail 0.7.2 loses ``h.*``'s
    columns after a semi join ``USING`` them)."""
    return " AND ".join(f"{other}.{k} = h.{k}" for k in key)


def controls(rows_sql: str) -> str:
    """``CONTROLS`` of the rows ``rows_sql`` selects."""
    return f"WITH rows AS ({rows_sql}) {CONTROLS}"


def as_of(table: str, key: tuple[str, ...], where: str) -> str:
    """Each key's newest row of ``table`` (a table or a join naming its rows ``h``) where
    ``where`` holds."""
    keys = ", ".join(key)
    return f"""SELECT * FROM {table} WHERE {where}
        QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY load_date DESC) = 1"""


def written(table: str) -> str:
    return f"SELECT * FROM {table} WHERE load_date = $day"


def replaced(table: str, key: tuple[str, ...], from_latest: bool) -> str:
    """The rows the keys ``$day`` wrote had before it: their rows in the latest tables when those
    hold the state before ``$day`` (``latest.holds_before``), else their newest history rows."""
    keys = ", ".join(key)
    wrote = f"(SELECT {keys} FROM {table} WHERE load_date = $day) n ON {_on(key, 'n')}"
    if from_latest:
        return f"SELECT h.* FROM {LATEST[table][0]} h SEMI JOIN {wrote}"
    return as_of(f"{table} h SEMI JOIN {wrote}", key, "h.load_date < $day")


def lines_of_touched(*, after: bool, from_latest: bool) -> str:
    """Every line of the orders ``$day`` touched, as of after it or before it: from history, or
    from the latest tables (which hold the state before ``$day``; after it, those rows but the
    ones ``$day`` replaced, and the rows it wrote)."""
    if not from_latest:
        lines = f"order_history h SEMI JOIN ({_TOUCHED}) t ON t.order_id = h.order_id"
        return as_of(lines, _LINE, "h.load_date <= $day" if after else "h.load_date < $day")
    before = f"SELECT h.* FROM order_latest h SEMI JOIN ({_TOUCHED}) t ON t.order_id = h.order_id"
    if not after:
        return before
    kept = f"SELECT h.* FROM ({before}) h ANTI JOIN ({_WRITTEN_LINES}) w ON {_on(_LINE, 'w')}"
    return f"{kept} UNION ALL {written('order_history')}"
