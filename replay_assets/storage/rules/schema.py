"""The warehouse's tables, written once: each table's columns in order with DuckDB's type names,
and the primary keys. The Spark adapter builds its Delta schemas from these; DuckDB's migrations
declare the same tables, and a test runs them and checks every table's columns, types and key
equal to these (``replay_assets_tests/storage/test_table_rules.py``). A table DuckDB keeps behind
a view (the landing's ``raw_receipts``, ``staged_events``) is listed by the view's name."""

from __future__ import annotations

TABLES: dict[str, str] = {
    "aggregate_versions": (
        "store_id VARCHAR, business_date VARCHAR, order_count BIGINT, line_count BIGINT, units BIGINT, "
        "amount_minor BIGINT, cost_minor BIGINT, gross_profit_minor BIGINT, publication_version BIGINT, "
        "as_of_load_date VARCHAR, certified_at TIMESTAMPTZ"
    ),
    "backfills": (
        "backfill_id VARCHAR, asset VARCHAR, from_partition VARCHAR, to_partition VARCHAR, lane VARCHAR, "
        "note VARCHAR, operator VARCHAR, created_at TIMESTAMPTZ"
    ),
    "batch_relandings": (
        "batch_id VARCHAR, load_date VARCHAR, manifest_sha256 VARCHAR, violations BIGINT, "
        "rejected BIGINT, note VARCHAR, operator VARCHAR, relanded_at TIMESTAMPTZ"
    ),
    "batch_resolutions": (
        "batch_id VARCHAR, action VARCHAR, note VARCHAR, operator VARCHAR, resolved_at TIMESTAMPTZ"
    ),
    "batch_violations": (
        "batch_id VARCHAR, load_date VARCHAR, source_file VARCHAR, line_number BIGINT, event_id VARCHAR, "
        "rule VARCHAR, detail VARCHAR, detected_at TIMESTAMPTZ"
    ),
    "candidates": (
        "asset VARCHAR, partition_key VARCHAR, as_of_load_date VARCHAR, content_sha256 VARCHAR, "
        "checks VARCHAR, reason VARCHAR, created_at TIMESTAMPTZ, run_id VARCHAR, rows_path VARCHAR, "
        "rows_bytes BIGINT"
    ),
    "commit_markers": (
        "operation_id VARCHAR, kind VARCHAR, partition_key VARCHAR, input_identity VARCHAR, "
        "committed_at TIMESTAMPTZ"
    ),
    "costs": (
        "run_id VARCHAR, step VARCHAR, partition_key VARCHAR, batch_id VARCHAR, events BIGINT, "
        "bytes_read BIGINT, cpu_seconds DOUBLE, wall_seconds DOUBLE, rows_written BIGINT, "
        "candidate_bytes BIGINT, recorded_at TIMESTAMPTZ"
    ),
    "customer_history": (
        "customer_id VARCHAR, name VARCHAR, segment VARCHAR, status VARCHAR, version BIGINT, "
        "source_seq BIGINT, image_sha256 VARCHAR, load_date VARCHAR"
    ),
    "customer_latest": (
        "customer_id VARCHAR, name VARCHAR, segment VARCHAR, status VARCHAR, version BIGINT, "
        "source_seq BIGINT, image_sha256 VARCHAR, load_date VARCHAR"
    ),
    "event_registry": (
        "source VARCHAR, event_id VARCHAR, source_seq BIGINT, content_sha256 VARCHAR, load_date VARCHAR"
    ),
    "landed_files": (
        "batch_id VARCHAR, load_date VARCHAR, source_file VARCHAR, sha256 VARCHAR, events BIGINT, "
        "bytes BIGINT"
    ),
    "latest_changes": "generation BIGINT, load_date VARCHAR, entity VARCHAR, part VARCHAR",
    "load_date_attempts": (
        "load_date VARCHAR, identity VARCHAR, status VARCHAR, reason VARCHAR, attempted_at TIMESTAMPTZ, "
        "seq BIGINT"
    ),
    "load_dates": "load_date VARCHAR, identity VARCHAR, applied_at TIMESTAMPTZ, run_id VARCHAR",
    "manifests": (
        "batch_id VARCHAR, source VARCHAR, load_date VARCHAR, manifest_sha256 VARCHAR, ready_at VARCHAR, "
        "seq_low BIGINT, seq_high BIGINT, source_events BIGINT, bytes_read BIGINT, landed_at TIMESTAMPTZ"
    ),
    "operation_audit": (
        "operation_id VARCHAR, version BIGINT, from_state VARCHAR, to_state VARCHAR, actor VARCHAR, "
        "note VARCHAR, changed_at TIMESTAMPTZ"
    ),
    "operations": (
        "operation_id VARCHAR, kind VARCHAR, asset VARCHAR, partition_key VARCHAR, "
        "intent_digest VARCHAR, state VARCHAR, version BIGINT, result VARCHAR, target_sha256 VARCHAR, "
        "created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ"
    ),
    "order_history": (
        "order_id VARCHAR, line_no BIGINT, store_id VARCHAR, customer_id VARCHAR, product_id VARCHAR, "
        "business_date VARCHAR, quantity BIGINT, amount_minor BIGINT, cost_minor BIGINT, status VARCHAR, "
        "version BIGINT, source_seq BIGINT, image_sha256 VARCHAR, load_date VARCHAR"
    ),
    "order_latest": (
        "order_id VARCHAR, line_no BIGINT, store_id VARCHAR, customer_id VARCHAR, product_id VARCHAR, "
        "business_date VARCHAR, quantity BIGINT, amount_minor BIGINT, cost_minor BIGINT, status VARCHAR, "
        "version BIGINT, source_seq BIGINT, image_sha256 VARCHAR, load_date VARCHAR"
    ),
    "partition_status": (
        "asset VARCHAR, partition_key VARCHAR, status VARCHAR, reason VARCHAR, last_good_version BIGINT, "
        "last_good_sha256 VARCHAR, updated_at TIMESTAMPTZ"
    ),
    "pointers": "name VARCHAR, value VARCHAR",
    "pruned_load_dates": (
        "load_date VARCHAR, operation_id VARCHAR, retention_load_dates BIGINT, raw_receipts BIGINT, "
        "staged_events BIGINT, registry_rows BIGINT, history_rows BIGINT, pruned_at TIMESTAMPTZ"
    ),
    "publications": (
        "asset VARCHAR, partition_key VARCHAR, version BIGINT, as_of_load_date VARCHAR, "
        "content_sha256 VARCHAR, checks VARCHAR, certified_at TIMESTAMPTZ, run_id VARCHAR, reason VARCHAR"
    ),
    "raw_receipts": (
        "batch_id VARCHAR, source VARCHAR, load_date VARCHAR, landed_at TIMESTAMPTZ, "
        "source_file VARCHAR, line_number BIGINT, payload_sha256 VARCHAR, payload VARCHAR, "
        "rendering TINYINT"
    ),
    "reconciliation": (
        "batch_id VARCHAR, source VARCHAR, load_date VARCHAR, source_events BIGINT, accepted BIGINT, "
        "rejected BIGINT, skipped_duplicate BIGINT, skipped_stale BIGINT, status VARCHAR"
    ),
    "rejected_events": (
        "batch_id VARCHAR, load_date VARCHAR, source_file VARCHAR, line_number BIGINT, event_id VARCHAR, "
        "reason_code VARCHAR, detail VARCHAR"
    ),
    "restatement_queue": (
        "business_date VARCHAR, store_id VARCHAR, load_date VARCHAR, queued_at TIMESTAMPTZ, "
        "released_at TIMESTAMPTZ, released_by VARCHAR"
    ),
    "schema_migrations": "version INTEGER, applied_at TIMESTAMPTZ",
    "sensor_cursors": "name VARCHAR, cursor VARCHAR",
    "snapshots": (
        "load_date VARCHAR, active_lines BIGINT, distinct_orders BIGINT, units BIGINT, "
        "amount_minor BIGINT, cost_minor BIGINT, gross_profit_minor BIGINT, row_count BIGINT, "
        "content_sha256 VARCHAR"
    ),
    "source_records": (
        "batch_id VARCHAR, load_date VARCHAR, records_file VARCHAR, record_number BIGINT, "
        "source_file VARCHAR, line_number BIGINT, adapter VARCHAR, reason VARCHAR, evidence VARCHAR, "
        "envelope VARCHAR"
    ),
    "staged_events": (
        "batch_id VARCHAR, source VARCHAR, load_date VARCHAR, source_file VARCHAR, line_number BIGINT, "
        "event_id VARCHAR, source_seq BIGINT, entity VARCHAR, op VARCHAR, key VARCHAR, version BIGINT, "
        "event_time VARCHAR, content_sha256 VARCHAR, image_sha256 VARCHAR, order_id VARCHAR, "
        "line_no BIGINT, store_id VARCHAR, customer_id VARCHAR, product_id VARCHAR, "
        "business_date VARCHAR, quantity BIGINT, amount_minor BIGINT, cost_minor BIGINT, status VARCHAR, "
        "name VARCHAR, segment VARCHAR"
    ),
    "state_digests": (
        "load_date VARCHAR, entity VARCHAR, rows BIGINT, s0 HUGEINT, s1 HUGEINT, s2 HUGEINT, s3 HUGEINT"
    ),
    "step_attempts": (
        "run_id VARCHAR, step VARCHAR, partition_key VARCHAR, attempt INTEGER, outcome VARCHAR, "
        "detail VARCHAR, recorded_at TIMESTAMPTZ"
    ),
    "upcast_events": (
        "batch_id VARCHAR, load_date VARCHAR, source_file VARCHAR, schema_version BIGINT, "
        "upcaster_sha256 VARCHAR, events BIGINT, upcaster VARCHAR"
    ),
    "watermarks": "source VARCHAR, watermark BIGINT, load_date VARCHAR",
}
KEYS: dict[str, tuple[str, ...]] = {
    "backfills": ("backfill_id",),
    "batch_resolutions": ("batch_id",),
    "commit_markers": ("operation_id",),
    "landed_files": ("batch_id", "source_file"),
    "load_dates": ("load_date",),
    "manifests": ("batch_id",),
    "operations": ("operation_id",),
    "partition_status": ("asset", "partition_key"),
    "pointers": ("name",),
    "pruned_load_dates": ("load_date",),
    "publications": ("asset", "partition_key", "version"),
    "reconciliation": ("batch_id",),
    "restatement_queue": ("business_date", "store_id", "load_date"),
    "schema_migrations": ("version",),
    "sensor_cursors": ("name",),
    "snapshots": ("load_date",),
    "state_digests": ("load_date", "entity"),
    "upcast_events": ("batch_id", "source_file", "schema_version"),
    "watermarks": ("source",),
}


def columns(table: str) -> tuple[tuple[str, str], ...]:
    """``table``'s columns in order, each with its DuckDB type name."""
    pairs = (column.split(" ", 1) for column in TABLES[table].split(", "))
    return tuple((name, kind) for name, kind in pairs)
