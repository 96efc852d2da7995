"""The use cases over each warehouse engine (DuckDB in the home; Delta tables through the Spark
adapter on the tests' Sail server, and on a Sail cluster of two workers) equal the pure reference
pipeline (:func:`replay_assets.core.state.apply_load_date` folded day by day) on random CDC
streams: shuffled, duplicated, cut into consecutive load dates, deletes and stale versions
included.

Compared: the final state (every key, tombstones included), the reconciliation of every batch,
the snapshot controls, and the certified daily_aggregates consumer view. A few lines that must
be rejected (malformed, missing or unknown fields, business date out of range) are mixed in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.aggregate import aggregate_images
from replay_assets.core.events import ValidationContext
from replay_assets.core.state import Batch, Counts, Row, apply_load_date
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.core.strategies import deliveries, histories, truth
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.stores import CLUSTER, make_store, store_rows

NOW = "2026-03-01T00:00:00Z"
SOURCE = "erp"
FIRST_LOAD_DATE = dt.date(2026, 2, 1)
IMAGE_FIELDS = (
    "store_id",
    "customer_id",
    "product_id",
    "business_date",
    "quantity",
    "amount_minor",
    "cost_minor",
)

# lines every pipeline must reject (per-event failures), mixed into random days
JUNK = (
    "{not json",
    '{"event_id": "j1", "source_seq": 9001}',  # fields missing
    json.dumps(
        {
            "event_id": "j2",
            "source_seq": 9002,
            "schema_version": 1,
            "entity": "order_line",
            "op": "delete",
            "key": {"order_id": "o9", "line_no": 1},
            "event_time": "2026-01-01T00:00:00Z",
            "after": None,
            "coupon": "X",  # unknown field
        }
    ),
    json.dumps(
        {
            "event_id": "j3",
            "source_seq": 9003,
            "schema_version": 1,
            "entity": "order_line",
            "op": "upsert",
            "key": {"order_id": "o9", "line_no": 1},
            "event_time": "2026-01-01T00:00:00Z",
            "after": {
                "order_id": "o9",
                "line_no": 1,
                "store_id": "north",
                "customer_id": "c1",
                "product_id": "p1",
                "business_date": "2019-12-31",  # before the business-date start
                "quantity": 1,
                "amount_minor": 1,
                "cost_minor": 1,
                "status": "active",
            },
        }
    ),
)

Key = tuple[str, int]
Final = tuple[int, str, tuple[Any, ...], int, str]  # version, status, image fields, source_seq, load_date


def load_dates(n: int) -> list[str]:
    return [(FIRST_LOAD_DATE + dt.timedelta(days=i)).isoformat() for i in range(n)]


def ready_at(day: str) -> str:
    return f"{day}T06:00:00Z"


def reference(days: list[list[str]], ctx: ValidationContext) -> tuple[dict[Key, Row], dict[str, Counts]]:
    """Fold each day's delivery through the pure reference pipeline."""
    state: dict[tuple[str, str], Row] = {}
    registry: dict[tuple[str, str], tuple[int, str]] = {}
    counts: dict[str, Counts] = {}
    for n, (day, lines) in enumerate(zip(load_dates(len(days)), days, strict=True)):
        batch = Batch(SOURCE, f"b{n}", ready_at(day), lines)
        out = apply_load_date(state, registry, [batch], day, lambda _: ctx)
        assert not out.blocked, out.blocked
        state, registry = out.state, out.registry
        counts[batch.batch_id] = out.counts.get(batch.batch_id, Counts())
    by_key = {}
    for (entity, key), row in state.items():
        assert entity == "order_line"
        order_id, line_no = json.loads(key)
        by_key[(order_id, line_no)] = row
    return by_key, counts


def reference_final(rows: dict[Key, Row]) -> dict[Key, Final]:
    out = {}
    for key, row in rows.items():
        if row.image is None:
            out[key] = (row.version, "deleted", (None,) * len(IMAGE_FIELDS), row.source_seq, row.load_date)
        else:
            image = tuple(row.image[f] for f in IMAGE_FIELDS)
            out[key] = (row.version, row.image["status"], image, row.source_seq, row.load_date)
    return out


@contextmanager
def run_storage(home: Path, days: list[list[str]], engine: Engine) -> Iterator[tuple[Pipeline, list[str]]]:
    """The deliveries written and driven through the use cases on ``engine`` (DuckDB in the
    home, or Delta tables under it on the tests' Sail server)."""
    settings = settings_for(home, NOW)
    if engine.kind == "duckdb":
        p, close = Pipeline(settings), lambda: None
    else:
        store, close = make_store(engine.kind, home / "delta", engine.remote)
        p = Pipeline(
            dataclasses.replace(settings, warehouse="spark", spark_remote=engine.remote), store=store
        )
    try:
        for n, (day, lines) in enumerate(zip(load_dates(len(days)), days, strict=True)):
            write_delivery(p.settings.landing, SOURCE, day, f"b{n}", lines, ready_at(day))
        yield p, drive(p)
    finally:
        close()


def storage_views(p: Pipeline, last: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the warehouse holds, through the port (any engine): the state as of the last load
    date, the consumer tables, reconciliation, the snapshot record and the pointer."""
    order = ("order_id", "line_no", "version", "status", *IMAGE_FIELDS, "source_seq", "load_date")
    recon = ("batch_id", "load_date", "source_events", "accepted", "rejected", "skipped_duplicate")
    aggregates = (
        *("store_id", "business_date", "order_count", "line_count", "units"),
        *("amount_minor", "cost_minor", "gross_profit_minor", "as_of_load_date"),
    )
    snapshot = ("active_lines", "distinct_orders", "units", "amount_minor", "cost_minor")

    def rows(frame: pl.DataFrame, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
        dates = [pl.col(c).cast(pl.String) for c in columns if frame.schema[c] == pl.Date]
        return frame.with_columns(dates).select(columns).rows()

    with p.store.read() as unit:
        aggregated = unit.reports.export_table("daily_aggregates", None).sort("store_id", "business_date")
        return {
            "state": rows(unit.reports.export_table("current_orders", last), order),
            "consumer": rows(unit.reports.export_table("current_orders", None), order),
            "reconciliation": rows(
                unit.reports.export_table("reconciliation", None).sort("batch_id"),
                (*recon, "skipped_stale", "status"),
            ),
            "aggregates": rows(aggregated, aggregates),
            "snapshot": [
                r[:-1]
                for r in rows(
                    pl.DataFrame(store_rows(p.store, "snapshots")).filter(pl.col("load_date") == last),
                    (*snapshot, "gross_profit_minor", "row_count", "load_date"),
                )
            ],
            "pointer": [(unit.publish.certified_pointer(),)],
            "pending": [(len(unit.publish.pending_groups()),)],
        }


def as_final(rows: list[tuple[Any, ...]]) -> dict[Key, Final]:
    out = {}
    for r in rows:
        image = tuple(v.isoformat() if isinstance(v, dt.date) else v for v in r[4 : 4 + len(IMAGE_FIELDS)])
        out[(r[0], r[1])] = (r[2], r[3], image, r[-2], r[-1])
    return out


@dataclasses.dataclass(frozen=True)
class Engine:
    kind: str
    remote: str = ""  # the Sail server's address, for Spark


@settings(
    max_examples=14,  # CI draws new ones every run (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_storage_pipeline_equals_the_reference_pipeline(data: st.DataObject) -> None:
    _equals_the_reference(Engine("duckdb"), data)


@pytest.mark.slow
@settings(
    max_examples=4,  # each load date is a few seconds on a local Sail server (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_the_spark_adapter_equals_the_reference_pipeline(sail: str, data: st.DataObject) -> None:
    _equals_the_reference(Engine("spark", sail), data)


@settings(
    max_examples=2,  # every plan shuffles between the cluster's workers (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_the_spark_adapter_on_a_sail_cluster_equals_the_reference_pipeline(
    sail_cluster: str, data: st.DataObject
) -> None:
    _equals_the_reference(Engine(CLUSTER, sail_cluster), data)


def _equals_the_reference(engine: Engine, data: st.DataObject) -> None:
    history = data.draw(histories(), label="history")
    days = data.draw(deliveries(history), label="days")
    for line in data.draw(st.lists(st.sampled_from(JUNK), max_size=2), label="junk"):
        day = days[data.draw(st.integers(0, len(days) - 1), label="junk day")]
        day.insert(data.draw(st.integers(0, len(day)), label="junk position"), line)
    home = Path(tempfile.mkdtemp(prefix="replay-assets-ref-"))
    try:
        dates = load_dates(len(days))
        last = dates[-1]
        with run_storage(home, days, engine) as (p, done):
            got = storage_views(p, last)
            assert drive(p) == []  # replaying the run is a no-op
        ctx = ValidationContext(
            dt.date.fromisoformat(p.settings.business_date_start),
            p.settings.business_date_end(p.now()),
        )
        ref_rows, ref_counts = reference(days, ctx)

        # every load date applied, in order, and the consumer pointer at the last one
        assert [d for d in done if d.startswith("apply")] == [f"apply {d}: APPLIED" for d in dates]
        assert got["pointer"] == [(last,)]
        assert got["pending"] == [(0,)]

        # final state: every key (tombstones included) equals the reference, and the truth
        expected = reference_final(ref_rows)
        assert as_final(got["state"]) == expected
        assert as_final(got["consumer"]) == expected
        assert {k: (v[0], None if v[1] == "deleted" else v[2]) for k, v in expected.items()} == {
            k: (version, None if image is None else tuple(image[f] for f in IMAGE_FIELDS))
            for k, (version, image) in truth(history).items()
        }

        # reconciliation per batch equals the reference, and adds up
        recon = {r[0]: r[1:] for r in got["reconciliation"]}
        assert set(recon) == {f"b{n}" for n in range(len(days))}
        for n, day in enumerate(dates):
            c = ref_counts[f"b{n}"]
            assert recon[f"b{n}"] == (
                day,
                c.source_events,
                c.accepted,
                c.rejected,
                c.skipped_duplicate,
                c.skipped_stale,
                "APPLIED",
            )
            assert c.balanced()
            assert c.source_events == sum(1 for line in days[n] if line.strip())

        # certified daily aggregates equal the oracle over the reference's active images
        images = [row.image for row in ref_rows.values() if row.image is not None]
        oracle = aggregate_images(images)
        assert [r[:8] for r in got["aggregates"]] == [
            (
                g["store_id"],
                g["business_date"],
                g["order_count"],
                g["line_count"],
                g["units"],
                g["amount_minor"],
                g["cost_minor"],
                g["gross_profit_minor"],
            )
            for g in oracle
        ]
        assert {r[8] for r in got["aggregates"]} <= {last}

        # the snapshot controls of the last load date
        active = [img for img in images if img["status"] == "active"]
        amount = sum(img["amount_minor"] for img in active)
        cost = sum(img["cost_minor"] for img in active)
        assert got["snapshot"] == [
            (
                len(active),
                len({img["order_id"] for img in active}),
                sum(img["quantity"] for img in active),
                amount,
                cost,
                amount - cost,
                len(ref_rows),
            )
        ]
    finally:
        shutil.rmtree(home, ignore_errors=True)
