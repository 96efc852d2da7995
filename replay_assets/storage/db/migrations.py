"""All DDL, in numbered migrations recorded in ``schema_migrations``. Dates are ISO text
internally (they sort correctly); consumer views cast them to DATE."""

from __future__ import annotations

from replay_assets.storage.db import segments
from replay_assets.storage.db.receipts import RAW_PAYLOADS_VIEW

_V1 = [
    """CREATE TABLE manifests (
        batch_id VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        manifest_sha256 VARCHAR NOT NULL, ready_at VARCHAR NOT NULL, seq_low BIGINT,
        seq_high BIGINT, source_events BIGINT NOT NULL, bytes_read BIGINT NOT NULL,
        landed_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE raw_receipts (
        batch_id VARCHAR NOT NULL, source VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        landed_at TIMESTAMPTZ NOT NULL, source_file VARCHAR NOT NULL, line_number BIGINT NOT NULL,
        payload_sha256 VARCHAR NOT NULL, payload VARCHAR NOT NULL)""",
    """CREATE TABLE staged_events (
        batch_id VARCHAR NOT NULL, source VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        source_file VARCHAR NOT NULL, line_number BIGINT NOT NULL, event_id VARCHAR NOT NULL,
        source_seq BIGINT NOT NULL, entity VARCHAR NOT NULL, op VARCHAR NOT NULL,
        key VARCHAR NOT NULL, version BIGINT NOT NULL, event_time VARCHAR NOT NULL,
        content_sha256 VARCHAR NOT NULL, image_sha256 VARCHAR NOT NULL,
        order_id VARCHAR, line_no BIGINT, store_id VARCHAR, customer_id VARCHAR,
        product_id VARCHAR, business_date VARCHAR, quantity BIGINT, amount_minor BIGINT,
        cost_minor BIGINT, status VARCHAR, name VARCHAR, segment VARCHAR)""",
    """CREATE TABLE rejected_events (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, source_file VARCHAR NOT NULL,
        line_number BIGINT NOT NULL, event_id VARCHAR, reason_code VARCHAR NOT NULL,
        detail VARCHAR NOT NULL)""",
    """CREATE TABLE batch_violations (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, source_file VARCHAR,
        line_number BIGINT, event_id VARCHAR, rule VARCHAR NOT NULL, detail VARCHAR NOT NULL,
        detected_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE event_registry (
        source VARCHAR NOT NULL, event_id VARCHAR NOT NULL, source_seq BIGINT NOT NULL,
        content_sha256 VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        PRIMARY KEY (source, event_id))""",
    """CREATE TABLE order_history (
        order_id VARCHAR NOT NULL, line_no BIGINT NOT NULL, store_id VARCHAR,
        customer_id VARCHAR, product_id VARCHAR, business_date VARCHAR, quantity BIGINT,
        amount_minor BIGINT, cost_minor BIGINT, status VARCHAR NOT NULL,
        version BIGINT NOT NULL, source_seq BIGINT NOT NULL, image_sha256 VARCHAR NOT NULL,
        load_date VARCHAR NOT NULL, PRIMARY KEY (order_id, line_no, load_date))""",
    """CREATE TABLE customer_history (
        customer_id VARCHAR NOT NULL, name VARCHAR, segment VARCHAR, status VARCHAR NOT NULL,
        version BIGINT NOT NULL, source_seq BIGINT NOT NULL, image_sha256 VARCHAR NOT NULL,
        load_date VARCHAR NOT NULL, PRIMARY KEY (customer_id, load_date))""",
    """CREATE TABLE restatement_queue (
        business_date VARCHAR NOT NULL, store_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        queued_at TIMESTAMPTZ NOT NULL, released_at TIMESTAMPTZ,
        PRIMARY KEY (business_date, store_id, load_date))""",
    """CREATE TABLE watermarks (
        source VARCHAR PRIMARY KEY, watermark BIGINT NOT NULL, load_date VARCHAR NOT NULL)""",
    """CREATE TABLE reconciliation (
        batch_id VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, load_date VARCHAR NOT NULL,
        source_events BIGINT NOT NULL, accepted BIGINT NOT NULL, rejected BIGINT NOT NULL,
        skipped_duplicate BIGINT NOT NULL, skipped_stale BIGINT NOT NULL,
        status VARCHAR NOT NULL)""",
    """CREATE TABLE load_dates (
        load_date VARCHAR PRIMARY KEY, identity VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL,
        run_id VARCHAR)""",
    """CREATE TABLE load_date_attempts (
        load_date VARCHAR NOT NULL, identity VARCHAR NOT NULL, status VARCHAR NOT NULL,
        reason VARCHAR NOT NULL, attempted_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE batch_resolutions (
        batch_id VARCHAR PRIMARY KEY, action VARCHAR NOT NULL, note VARCHAR NOT NULL,
        operator VARCHAR NOT NULL, resolved_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE snapshots (
        load_date VARCHAR PRIMARY KEY, active_lines BIGINT, distinct_orders BIGINT,
        units BIGINT, amount_minor BIGINT, cost_minor BIGINT, gross_profit_minor BIGINT,
        row_count BIGINT NOT NULL, content_sha256 VARCHAR NOT NULL)""",
    """CREATE TABLE aggregate_versions (
        store_id VARCHAR NOT NULL, business_date VARCHAR NOT NULL, order_count BIGINT NOT NULL,
        line_count BIGINT NOT NULL, units BIGINT NOT NULL, amount_minor BIGINT NOT NULL,
        cost_minor BIGINT NOT NULL, gross_profit_minor BIGINT NOT NULL,
        publication_version BIGINT NOT NULL, as_of_load_date VARCHAR NOT NULL,
        certified_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE publications (
        asset VARCHAR NOT NULL, partition_key VARCHAR NOT NULL, version BIGINT NOT NULL,
        as_of_load_date VARCHAR NOT NULL, content_sha256 VARCHAR NOT NULL, checks VARCHAR,
        certified_at TIMESTAMPTZ NOT NULL, run_id VARCHAR, reason VARCHAR,
        PRIMARY KEY (asset, partition_key, version))""",
    """CREATE TABLE partition_status (
        asset VARCHAR NOT NULL, partition_key VARCHAR NOT NULL, status VARCHAR NOT NULL,
        reason VARCHAR, last_good_version BIGINT, last_good_sha256 VARCHAR,
        updated_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (asset, partition_key))""",
    "CREATE TABLE pointers (name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    "CREATE TABLE sensor_cursors (name VARCHAR PRIMARY KEY, cursor VARCHAR NOT NULL)",
    """CREATE TABLE commit_markers (
        operation_id VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, partition_key VARCHAR NOT NULL,
        input_identity VARCHAR NOT NULL, committed_at TIMESTAMPTZ NOT NULL)""",
    """CREATE MACRO orders_as_of(d) AS TABLE
        SELECT order_id, line_no, store_id, customer_id, product_id,
               CAST(business_date AS DATE) AS business_date, quantity, amount_minor, cost_minor,
               status, version, source_seq, CAST(load_date AS DATE) AS load_date
        FROM order_history WHERE load_date <= CAST(d AS VARCHAR)
        QUALIFY row_number() OVER (PARTITION BY order_id, line_no ORDER BY load_date DESC) = 1""",
    """CREATE MACRO customers_as_of(d) AS TABLE
        SELECT customer_id, name, segment, status, version, source_seq,
               CAST(load_date AS DATE) AS load_date
        FROM customer_history WHERE load_date <= CAST(d AS VARCHAR)
        QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY load_date DESC) = 1""",
    """CREATE VIEW current_orders AS SELECT * FROM orders_as_of(
        (SELECT coalesce(max(value), '') FROM pointers WHERE name = 'published_load_date'))""",
    """CREATE VIEW current_customers AS SELECT * FROM customers_as_of(
        (SELECT coalesce(max(value), '') FROM pointers WHERE name = 'published_load_date'))""",
    """CREATE VIEW daily_aggregates AS
        SELECT store_id, CAST(business_date AS DATE) AS business_date, order_count, line_count,
               units, amount_minor, cost_minor, gross_profit_minor, publication_version,
               CAST(as_of_load_date AS DATE) AS as_of_load_date, certified_at
        FROM aggregate_versions a
        WHERE publication_version = (SELECT max(version) FROM publications p
            WHERE p.asset = 'daily_aggregates' AND p.partition_key = a.business_date)""",
]

_V2 = [
    """CREATE TABLE candidates (
        asset VARCHAR NOT NULL, partition_key VARCHAR NOT NULL, as_of_load_date VARCHAR NOT NULL,
        content_sha256 VARCHAR NOT NULL, checks VARCHAR NOT NULL, reason VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL, run_id VARCHAR, rows_path VARCHAR NOT NULL,
        rows_bytes BIGINT NOT NULL)""",
    """CREATE TABLE costs (
        run_id VARCHAR, step VARCHAR NOT NULL, partition_key VARCHAR NOT NULL, batch_id VARCHAR,
        events BIGINT NOT NULL, bytes_read BIGINT NOT NULL, cpu_seconds DOUBLE NOT NULL,
        wall_seconds DOUBLE NOT NULL, rows_written BIGINT NOT NULL, candidate_bytes BIGINT NOT NULL,
        recorded_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE backfills (
        backfill_id VARCHAR PRIMARY KEY, asset VARCHAR NOT NULL, from_partition VARCHAR NOT NULL,
        to_partition VARCHAR NOT NULL, lane VARCHAR NOT NULL, note VARCHAR NOT NULL,
        operator VARCHAR NOT NULL, created_at TIMESTAMPTZ NOT NULL)""",
]

_V3 = [
    """CREATE TABLE operations (
        operation_id VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, asset VARCHAR NOT NULL,
        partition_key VARCHAR NOT NULL, intent_digest VARCHAR NOT NULL, state VARCHAR NOT NULL,
        version BIGINT NOT NULL, result VARCHAR, target_sha256 VARCHAR,
        created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL)""",
    """CREATE TABLE operation_audit (
        operation_id VARCHAR NOT NULL, version BIGINT NOT NULL, from_state VARCHAR,
        to_state VARCHAR NOT NULL, actor VARCHAR NOT NULL, note VARCHAR NOT NULL,
        changed_at TIMESTAMPTZ NOT NULL)""",
]

_V4 = [
    """CREATE TABLE step_attempts (
        run_id VARCHAR NOT NULL, step VARCHAR NOT NULL, partition_key VARCHAR NOT NULL,
        attempt INTEGER NOT NULL, outcome VARCHAR NOT NULL, detail VARCHAR NOT NULL,
        recorded_at TIMESTAMPTZ NOT NULL)""",
]

# No ART indexes on the tables that grow with every event: DuckDB keeps an ART index
# in memory and its inserts are slow per key; at 10M events a day the event
# registry's primary key alone ran the 1 GB warehouse out of memory. Uniqueness holds by
# construction (one winner per key and load date; a registry row only for an id not registered
# before) and the gate checks unique keys on every certified state.
_UNINDEXED = {
    "event_registry": """(source VARCHAR NOT NULL, event_id VARCHAR NOT NULL, source_seq BIGINT NOT NULL,
        content_sha256 VARCHAR NOT NULL, load_date VARCHAR NOT NULL)""",
    "order_history": """(order_id VARCHAR NOT NULL, line_no BIGINT NOT NULL, store_id VARCHAR,
        customer_id VARCHAR, product_id VARCHAR, business_date VARCHAR, quantity BIGINT,
        amount_minor BIGINT, cost_minor BIGINT, status VARCHAR NOT NULL,
        version BIGINT NOT NULL, source_seq BIGINT NOT NULL, image_sha256 VARCHAR NOT NULL,
        load_date VARCHAR NOT NULL)""",
    "customer_history": """(customer_id VARCHAR NOT NULL, name VARCHAR, segment VARCHAR,
        status VARCHAR NOT NULL, version BIGINT NOT NULL, source_seq BIGINT NOT NULL,
        image_sha256 VARCHAR NOT NULL, load_date VARCHAR NOT NULL)""",
}
_V5 = [
    statement
    for table, columns in _UNINDEXED.items()
    for statement in (
        f"CREATE TABLE {table}_v5 {columns}",
        f"INSERT INTO {table}_v5 SELECT * FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_v5 RENAME TO {table}",
    )
]

# Retention: what a pruned load date keeps. ``landed_files`` holds each delivered file's
# verified sha256, event count and size from landing on (homes landed before v6 keep their counts
# from raw receipts, without a hash); ``pruned_load_dates`` is the evidence of each pruning.
_V6 = [
    """CREATE TABLE landed_files (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, source_file VARCHAR NOT NULL,
        sha256 VARCHAR, events BIGINT NOT NULL, bytes BIGINT,
        PRIMARY KEY (batch_id, source_file))""",
    """INSERT INTO landed_files (batch_id, load_date, source_file, sha256, events, bytes)
        SELECT batch_id, any_value(load_date), source_file, NULL, count(*), NULL
        FROM raw_receipts GROUP BY batch_id, source_file""",
    """CREATE TABLE pruned_load_dates (
        load_date VARCHAR PRIMARY KEY, operation_id VARCHAR NOT NULL,
        retention_load_dates BIGINT NOT NULL, raw_receipts BIGINT NOT NULL,
        staged_events BIGINT NOT NULL, registry_rows BIGINT NOT NULL,
        history_rows BIGINT NOT NULL, pruned_at TIMESTAMPTZ NOT NULL)""",
]

# Cost by change: each certified date's content-hash sums per entity (row count and
# the exact sums of the rows' sha256 limbs), so the next date adds what it changed.
_V7 = [
    """CREATE TABLE state_digests (
        load_date VARCHAR NOT NULL, entity VARCHAR NOT NULL, rows BIGINT NOT NULL,
        s0 HUGEINT NOT NULL, s1 HUGEINT NOT NULL, s2 HUGEINT NOT NULL, s3 HUGEINT NOT NULL,
        PRIMARY KEY (load_date, entity))""",
]

# Cost by change: each key's newest history row, kept with history in one transaction
# (``storage/apply/latest.py``), so a date's fold, hash and controls read the state, not history.
_V8 = [
    f"CREATE TABLE order_latest {_UNINDEXED['order_history']}",
    f"CREATE TABLE customer_latest {_UNINDEXED['customer_history']}",
    """INSERT INTO order_latest SELECT * FROM order_history
        QUALIFY row_number() OVER (PARTITION BY order_id, line_no ORDER BY load_date DESC) = 1""",
    """INSERT INTO customer_latest SELECT * FROM customer_history
        QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY load_date DESC) = 1""",
    # which partitions of the published current state each change of the latest tables touched
    """CREATE TABLE latest_changes (
        generation BIGINT NOT NULL, load_date VARCHAR NOT NULL, entity VARCHAR NOT NULL,
        part VARCHAR NOT NULL)""",
]

# Schema evolution: the events of each landed file a declared upcaster took from
# another schema_version to the contract, with the declaration's identity.
_V9 = [
    """CREATE TABLE upcast_events (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, source_file VARCHAR NOT NULL,
        schema_version BIGINT NOT NULL, upcaster_sha256 VARCHAR NOT NULL, events BIGINT NOT NULL,
        upcaster VARCHAR NOT NULL, PRIMARY KEY (batch_id, source_file, schema_version))""",
    # an operator's decision to land a schema-blocked batch again (``resolve --action reland``)
    """CREATE TABLE batch_relandings (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, manifest_sha256 VARCHAR NOT NULL,
        violations BIGINT NOT NULL, rejected BIGINT NOT NULL, note VARCHAR NOT NULL,
        operator VARCHAR NOT NULL, relanded_at TIMESTAMPTZ NOT NULL)""",
    # what an adapter read (``land --adapter debezium``): each record as delivered, the native line
    # it became (or why none), and the evidence the native event cannot carry (position, transaction)
    """CREATE TABLE source_records (
        batch_id VARCHAR NOT NULL, load_date VARCHAR NOT NULL, records_file VARCHAR NOT NULL,
        record_number BIGINT NOT NULL, source_file VARCHAR, line_number BIGINT, adapter VARCHAR NOT NULL,
        reason VARCHAR, evidence VARCHAR NOT NULL, envelope VARCHAR NOT NULL)""",
    # which run certified each queued group (the duration of a daily_aggregates partition's SLO)
    "ALTER TABLE restatement_queue ADD COLUMN released_by VARCHAR",
    # attempts in the order written: two at one instant (an injected clock) keep their order
    "CREATE SEQUENCE attempt_seq",
    "ALTER TABLE load_date_attempts ADD COLUMN seq BIGINT DEFAULT nextval('attempt_seq')",
]

# Throughput: each fact once. A line the grammar certified keeps its sha256 and how it
# was rendered; its text is its staged event rendered again (``raw_payloads``).
_V10 = [
    "ALTER TABLE raw_receipts ALTER COLUMN payload DROP NOT NULL",
    "ALTER TABLE raw_receipts ADD COLUMN rendering TINYINT",
    RAW_PAYLOADS_VIEW,
]

# Throughput: the state's and the registry's sha256 columns stored uncompressed. DuckDB
# compresses every VARCHAR with DICT_FSST, which is slow to write and to read for a 64-character
# hex hash, to store it in about half its bytes. The apply at volume gained more than the extra
# blocks cost (design.md "Hash columns stored uncompressed"). Each table is rebuilt as in v5,
# in the migration's one transaction.
HASH_COLUMNS = {
    "event_registry": "content_sha256",
    "order_history": "image_sha256",
    "customer_history": "image_sha256",
    "order_latest": "image_sha256",
    "customer_latest": "image_sha256",
}


def _uncompressed(table: str) -> str:
    columns = _UNINDEXED[table.replace("_latest", "_history")]
    hashed = f"{HASH_COLUMNS[table]} VARCHAR NOT NULL"
    assert columns.count(hashed) == 1
    return columns.replace(hashed, f"{hashed} USING COMPRESSION uncompressed")


_V11 = [
    statement
    for table in HASH_COLUMNS
    for statement in (
        f"CREATE TABLE {table}_v11 {_uncompressed(table)}",
        f"INSERT INTO {table}_v11 SELECT * FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_v11 RENAME TO {table}",
    )
]

# Throughput: the landing's two per-line tables become views over tables of the same
# columns (``receipt_rows``, ``staged_rows``), which the landing, a relanding and retention write;
# every reader keeps reading ``raw_receipts`` and ``staged_events``. This step changes no row and
# no reader; the next has the views also read the rows the landing workers leave in Parquet files
# (benchmarks/README, thirteenth round).
LANDING_VIEWS = {k.view: k.table for k in segments.KINDS}  # raw_receipts -> receipt_rows, ...
_V12 = [
    statement
    for view, table in LANDING_VIEWS.items()
    for statement in (f"ALTER TABLE {view} RENAME TO {table}", f"CREATE VIEW {view} AS SELECT * FROM {table}")
]

# Throughput: the landing's rows stay in the workers' Parquet files under
# ``$HOME/segments`` (``storage/db/segments.py``), registered in ``landing_segments``; the
# views read the tables' rows and the registered files' rows. Existing rows stay in the tables.
_V13 = [segments.REGISTER, *(segments.view_sql(kind) for kind in segments.KINDS)]

# A home's path holds any character a file system allows: the views read its folder as
# the literal start of their file patterns, so a home named g[A]h never reads a home gAh's files.
_V14 = [segments.view_sql(kind) for kind in segments.KINDS]

MIGRATIONS: list[tuple[int, list[str]]] = [
    (1, _V1),
    (2, _V2),
    (3, _V3),
    (4, _V4),
    (5, _V5),
    (6, _V6),
    (7, _V7),
    (8, _V8),
    (9, _V9),
    (10, _V10),
    (11, _V11),
    (12, _V12),
    (13, _V13),
    (14, _V14),
]
