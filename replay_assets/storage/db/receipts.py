"""Raw receipts keep each fact once: a line the grammar certified (``core/line_grammar.py``) is,
character for character, its staged event rendered in the layout it came in, so its receipt
keeps the line's sha256 and that layout (``rendering``) instead of a second copy of its text.
Every other line keeps its text (``payload``). The view ``raw_payloads`` gives every receipt's
text, and the stored sha256 of the raw bytes proves each rendering: ``sha256(payload) =
payload_sha256`` holds for every row (the tests check it, an auditor can)."""

from __future__ import annotations

from replay_assets.core.events import CUSTOMER_IMAGE, ORDER_IMAGE
from replay_assets.core.line_grammar import AFTER, INT_COLUMNS, SORTED, WITH_VERSION


def _pair(name: str, column: str) -> list[str]:
    if name in INT_COLUMNS:
        return [f"'\"{name}\":'", column]
    return [f'\'"{name}":"\'', column, "'\"'"]


def _object(names: list[str]) -> str:
    parts: list[str] = []
    for i, name in enumerate(names):
        parts += (["','"] if i else []) + _pair(name, f"s.{name}")
    return "concat('{', " + ", ".join(parts) + ", '}')"


def _event(entity: str, image: tuple[str, ...], key: list[str], sort: bool) -> str:
    """The rendering of one entity's staged events in one layout; version and after by the code."""
    image_names, key_names = (sorted(image), sorted(key)) if sort else (list(image), key)
    fields = {
        "event_id": _pair("event_id", "s.event_id"),
        "source_seq": _pair("source_seq", "s.source_seq"),
        "schema_version": ["'\"schema_version\":1'"],
        "entity": [f'\'"entity":"{entity}"\''],
        "op": _pair("op", "s.op"),
        "key": ["'\"key\":'", _object(key_names)],
        "event_time": _pair("event_time", "s.event_time"),
    }
    version = f"""CASE WHEN r.rendering & {WITH_VERSION} <> 0
        THEN concat(',"version":', s.version) ELSE '' END"""
    order = sorted(fields) if sort else list(fields)
    body = [p for i, n in enumerate(order) for p in ([] if i == 0 else ["','"]) + fields[n]]
    image_text = _object(image_names)
    if sort:
        after = f"""CASE r.rendering // {AFTER} WHEN 0 THEN '' WHEN 1 THEN '"after":null,'
            ELSE concat('"after":', {image_text}, ',') END"""
        return f"concat('{{', {after}, {', '.join(body)}, {version}, '}}')"
    after = f"""CASE r.rendering // {AFTER} WHEN 0 THEN '' WHEN 1 THEN ',"after":null'
        ELSE concat(',"after":', {image_text}) END"""
    head, time = body[: -len(fields["event_time"]) - 1], body[-len(fields["event_time"]) :]
    return f"concat('{{', {', '.join(head)}, {version}, ',', {', '.join(time)}, {after}, '}}')"


def _rendered() -> str:
    cases = []
    for sort in (False, True):
        for entity, image, key in (
            ("order_line", ORDER_IMAGE, ["order_id", "line_no"]),
            ("customer", CUSTOMER_IMAGE, ["customer_id"]),
        ):
            when = f"r.rendering & {SORTED} = {SORTED if sort else 0} AND s.entity = '{entity}'"
            cases.append(f"WHEN {when} THEN {_event(entity, image, key, sort)}")
    return "CASE " + "\n    ".join(cases) + " END"


RAW_PAYLOADS_VIEW = f"""CREATE OR REPLACE VIEW raw_payloads AS
SELECT r.batch_id, r.source, r.load_date, r.landed_at, r.source_file, r.line_number, r.payload_sha256,
    coalesce(r.payload, {_rendered()}) AS payload
FROM raw_receipts r LEFT JOIN staged_events s
    ON r.rendering IS NOT NULL AND s.batch_id = r.batch_id AND s.source_file = r.source_file
    AND s.line_number = r.line_number"""
