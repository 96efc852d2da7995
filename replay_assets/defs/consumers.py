"""An example of Dagster code downstream of the pipeline: it reads the published copy
(``$HOME/published.duckdb``, certified rows only) read-only through dagster-duckdb's
``DuckDBResource``, never the warehouse, so it runs while a load holds the writer lock and never
makes a load wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

PUBLISHED_KEY = "published"  # the resource key consumers name
# Per store and ISO week (Monday to Sunday), over the certified daily aggregates. An order has one
# business date, so the daily distinct order counts add up to the week's. DuckDB sums BIGINTs as
# HUGEINT; the report's figures fit a BIGINT like the daily ones.
WEEKLY_SQL = """
SELECT store_id,
       strftime(business_date, '%G-W%V') AS iso_week,
       CAST(date_trunc('week', business_date) AS DATE) AS week_start,
       count(*) AS business_days,
       CAST(sum(order_count) AS BIGINT) AS order_count,
       CAST(sum(line_count) AS BIGINT) AS line_count,
       CAST(sum(units) AS BIGINT) AS units,
       CAST(sum(amount_minor) AS BIGINT) AS amount_minor,
       CAST(sum(cost_minor) AS BIGINT) AS cost_minor,
       CAST(sum(gross_profit_minor) AS BIGINT) AS gross_profit_minor,
       max(as_of_load_date) AS as_of_load_date
FROM daily_aggregates
GROUP BY ALL
ORDER BY iso_week, store_id
"""
COLUMNS = {  # the report's columns and their types, as the asset's table schema shows them
    "store_id": "string",
    "iso_week": "string",
    "week_start": "date",
    "business_days": "int",
    "order_count": "int",
    "line_count": "int",
    "units": "int",
    "amount_minor": "int",
    "cost_minor": "int",
    "gross_profit_minor": "int",
    "as_of_load_date": "date",
}
REPORT_SCHEMA = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in COLUMNS.items()])


def published_resource(home: Path) -> DuckDBResource:
    """The consumer handle on a home's published copy: read-only, by absolute path (its views find
    their Parquet files in the folder of the database they are read from)."""
    return DuckDBResource(
        database=str((home / "published.duckdb").absolute()),
        connection_config={"access_mode": "READ_ONLY"},
    )


@dg.asset(
    deps=["daily_aggregates"],
    group_name="consumers",
    kinds={"duckdb"},
    metadata={"dagster/column_schema": REPORT_SCHEMA},
)
def weekly_store_report(published: DuckDBResource) -> dg.MaterializeResult:  # type: ignore[type-arg]
    """Sales per store and ISO week from the certified daily aggregates, read read-only from the
    published copy. An example consumer: materialize it from the UI whenever you want the report;
    it never opens the warehouse, so it does not wait for (or hold up) a load."""
    if not Path(published.database).exists():
        raise dg.Failure(
            f"{published.database} does not exist yet: nothing is published until a load date is "
            "certified (`replay-assets run`, or the sensors under the daemon)",
            allow_retries=False,
        )
    with published.get_connection() as con:
        rows = con.sql(WEEKLY_SQL).pl().to_dicts()
    return dg.MaterializeResult(metadata=report_metadata(rows))


def report_metadata(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The report as a table in the UI, with its size and totals (the Plots tab draws them)."""
    records = [dg.TableRecord({k: _cell(v) for k, v in row.items()}) for row in rows]
    return {
        "report": dg.MetadataValue.table(records, schema=REPORT_SCHEMA),
        "dagster/row_count": len(rows),
        "amount_minor": sum(int(row["amount_minor"]) for row in rows),
        "order_count": sum(int(row["order_count"]) for row in rows),
    }


def _cell(value: Any) -> str | int | float | bool | None:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)
