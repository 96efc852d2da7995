"""The staged-event columns of checked, typed event values, as SQL text in DuckDB's dialect: the
canonical key text, image and content JSON and their sha256, written once for every tier that
certifies lines set-based (DuckDB's JSON path, the grammar's workers, the engine's canonical-line
rule, ``canonical_lines.py``). Pure text builders: no engine is imported."""

from __future__ import annotations

from replay_assets.core.events import CUSTOMER_IMAGE, ORDER_IMAGE, TOMBSTONE_IMAGE_SHA

ORDER = list(ORDER_IMAGE)
CUSTOMER = list(CUSTOMER_IMAGE)
IMAGE_INTS = ("line_no", "quantity", "amount_minor", "cost_minor")


# Renderings use concat(), many arguments in one call: chained || allocates at every step
# (docs/facts.md). concat() reads NULL as '', which cannot fake a match: every value follows a
# literal '"name":' prefix, and valid JSON has a non-empty value text there. Integers are cast to
# text first: SQLGlot renders concat() for Spark with coalesce(value, ''), which Sail types as the
# integer and fails on '' (docs/facts.md).
def concat_sql(parts: list[str]) -> str:
    return "concat(" + ", ".join(parts) + ")"


def piece(name: str, column: str, quoted: bool) -> list[str]:
    """``"name":value`` (a JSON string when ``quoted``) as concat() arguments."""
    if quoted:
        return ["'\"" + name + '":"\'', column, "'\"'"]
    return ["'\"" + name + "\":'", _text(column)]


def _text(column: str) -> str:
    return f"CAST({column} AS VARCHAR)"


def json_object(fields: list[tuple[str, str, bool]]) -> str:
    """SQL rendering a compact JSON object of these columns in this field order."""
    parts = ["'{'"]
    for i, field in enumerate(fields):
        parts += (["','"] if i else []) + piece(*field)
    return concat_sql([*parts, "'}'"])


def image_sql(order: list[str], customer: list[str]) -> str:
    def fields(names: list[str]) -> list[tuple[str, str, bool]]:
        return [(n, f"a_{n}", n not in IMAGE_INTS) for n in names]

    return f"""CASE entity WHEN 'order_line' THEN {json_object(fields(order))}
        WHEN 'customer' THEN {json_object(fields(customer))} END"""


def events_sql(source: str, *, hashed: bool, carry: tuple[str, ...] = ()) -> str:
    """The staged-event columns of the relation ``source`` (SQL text of our own) of checked,
    typed values (``entity``, ``op``, ``event_id``, ``event_time``, ``source_seq``, ``version``,
    ``k_*`` and ``a_*``). With ``hashed``, ``content_sha256`` and ``image_sha256``; without, the
    canonical texts they are the sha256 of, as ``content_json`` and ``image_json`` (NULL for a
    delete, whose image sha256 is the tombstone marker). ``carry`` names more columns to keep."""
    content = """concat('{"after":', coalesce(image_json, 'null'), ',"entity":"', entity, '","event_id":"',
        event_id, '","event_time":"', event_time, '","key":', key_object, ',"op":"', op,
        '","schema_version":1,"source_seq":', CAST(source_seq AS VARCHAR),
        ',"version":', CAST(version AS VARCHAR), '}')"""
    hashes = (
        f"sha256({content}) AS content_sha256, "
        f"coalesce(sha256(image_json), '{TOMBSTONE_IMAGE_SHA}') AS image_sha256"
        if hashed
        else f"{content} AS content_json, image_json"
    )
    return f"""
SELECT line_number, event_id, source_seq, entity, op, key, version, event_time, {hashes},
    CASE WHEN entity = 'order_line' THEN k_order_id END AS order_id,
    CASE WHEN entity = 'order_line' THEN k_line_no END AS line_no,
    CASE WHEN op = 'upsert' AND entity = 'order_line' THEN a_store_id END AS store_id,
    CASE WHEN entity = 'customer' THEN k_customer_id WHEN op = 'upsert' THEN a_customer_id END AS customer_id,
    CASE WHEN op = 'upsert' THEN a_product_id END AS product_id,
    CASE WHEN op = 'upsert' THEN a_business_date END AS business_date,
    CASE WHEN op = 'upsert' THEN a_quantity END AS quantity,
    CASE WHEN op = 'upsert' THEN a_amount_minor END AS amount_minor,
    CASE WHEN op = 'upsert' THEN a_cost_minor END AS cost_minor,
    CASE WHEN op = 'upsert' THEN a_status END AS status,
    CASE WHEN op = 'upsert' THEN a_name END AS name,
    CASE WHEN op = 'upsert' THEN a_segment END AS segment{"".join(f", {c}" for c in carry)}
FROM (
    SELECT *,
        CASE WHEN entity = 'order_line' THEN concat('["', k_order_id, '",', CAST(k_line_no AS VARCHAR), ']')
             ELSE concat('["', k_customer_id, '"]') END AS key,
        CASE WHEN entity = 'order_line'
             THEN concat('{{"line_no":', CAST(k_line_no AS VARCHAR), ',"order_id":"', k_order_id, '"}}')
             ELSE concat('{{"customer_id":"', k_customer_id, '"}}') END AS key_object,
        CASE WHEN op <> 'delete' THEN {image_sql(sorted(ORDER), sorted(CUSTOMER))} END AS image_json
    FROM {source})"""
