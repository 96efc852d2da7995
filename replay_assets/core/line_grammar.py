"""The grammars of the fast path of :func:`core.events.parse_event`: which lines may be certified.

A line is *certified* only when it is, character for character, one of the two renderings the
contract's producers write: compact JSON in the contract's field order, or compact
JSON with sorted keys (what ``canonical_json`` and Parquet deliveries give). Each rendering is a
regular grammar here: fixed field names in a fixed order (so no unknown, missing or duplicated
field), strings drawn from their field's character set (ids, dates, times, the closed sets; no
escape, quote or control character anywhere), integers as JSON writes them (no sign, no leading
zero, no fraction) in 0..1e12. The grammars are regular expressions that Python's ``re`` and
Rust's ``regex`` read the same way: no backreference or lookaround, classes of ASCII ranges, and
the text class a negated one (any other character, counted by code point in both).

``storage/landing/certify.py`` matches them set-based and checks what a grammar cannot say
(calendar validity, the business-date window, the key equal to the image's key, the declared
slice, an upsert with an image and a delete without). Any other line goes to the slower tiers,
so reasons, details and line numbers stay the oracle's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from replay_assets.core.events import CUSTOMER_IMAGE, ORDER_IMAGE

_ID = "[A-Za-z0-9][A-Za-z0-9_.|-]{0,79}"  # events.ID_PATTERN
_INT = "0|[1-9][0-9]{0,11}|1000000000000"  # a JSON integer in 0..1e12
_TIME = (
    "[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    "(?:\\.[0-9]{3}|\\.[0-9]{6})?(?:Z|\\+00:00)"
)
_DATE = "[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}"
_TEXT = '[^"\\\\\\x00-\\x1f]{1,200}'  # a text of 1..200 characters needing no escape
_STATUS = "active|cancelled"

# field -> (value pattern, quoted)
_VALUE = {
    "order_id": (_ID, True),
    "line_no": (_INT, False),
    "store_id": (_ID, True),
    "customer_id": (_ID, True),
    "product_id": (_ID, True),
    "business_date": (_DATE, True),
    "quantity": (_INT, False),
    "amount_minor": (_INT, False),
    "cost_minor": (_INT, False),
    "status": (_STATUS, True),
    "name": (_TEXT, True),
    "segment": (_TEXT, True),
}


def _field(name: str, group: str, pattern: str, quoted: bool) -> str:
    value = f"(?P<{group}>{pattern})"
    return f'"{name}":' + (f'"{value}"' if quoted else value)


def _object(fields: Sequence[str], prefix: str) -> str:
    return "\\{" + ",".join(_field(n, prefix + n, *_VALUE[n]) for n in fields) + "\\}"


def _grammar(entity: str, image: Sequence[str], key: Sequence[str], sort: bool) -> re.Pattern[str]:
    """The rendering of one entity's events in the contract's field order, or sorted."""
    if sort:
        image, key = sorted(image), sorted(key)
    fields = {
        "event_id": _field("event_id", "event_id", _ID, True),
        "source_seq": _field("source_seq", "source_seq", _INT, False),
        "schema_version": '"schema_version":1',
        "entity": f'"entity":"{entity}"',
        "op": _field("op", "op", "upsert|delete", True),
        "key": '"key":' + _object(key, "k_"),
        "event_time": _field("event_time", "event_time", _TIME, True),
    }
    version = f"(?:,{_field('version', 'version', _INT, False)})?"
    after = f'"after":(?P<after>null|{_object(image, "a_")})'
    if sort:
        body = f"(?:{after},)?" + ",".join(fields[n] for n in sorted(fields)) + version
    else:
        head = ["event_id", "source_seq", "schema_version", "entity", "op", "key"]
        body = ",".join(fields[n] for n in head) + f"{version},{fields['event_time']}(?:,{after})?"
    return re.compile(f"\\{{{body}\\}}")


def _key_fields(entity: str) -> list[str]:
    return ["order_id", "line_no"] if entity == "order_line" else ["customer_id"]


GRAMMARS: list[tuple[str, re.Pattern[str], bool]] = [
    (entity, _grammar(entity, image, _key_fields(entity), sort), sort)
    for sort in (False, True)
    for entity, image in (("order_line", ORDER_IMAGE), ("customer", CUSTOMER_IMAGE))
]

# what a certified line gives, as a staged event (``STAGED_COLUMNS`` order)
STAGED_COLUMNS = (
    "line_index", "event_id", "source_seq", "entity", "op", "key", "version", "event_time",
    "content_sha256", "image_sha256", "order_id", "line_no", "store_id", "customer_id", "product_id",
    "business_date", "quantity", "amount_minor", "cost_minor", "status", "name", "segment", "rendering",
)  # fmt: skip
INT_COLUMNS = frozenset({"source_seq", "version", "line_no", "quantity", "amount_minor", "cost_minor"})
# How a certified line was written, so the line is its staged event rendered again (storage
# keeps each fact once: ``storage/db/receipts.py``): the sum of SORTED (keys sorted, else
# the contract's field order), WITH_VERSION (``version`` present) and the ``after`` form times
# AFTER (0 absent, 1 null, 2 an image).
SORTED, WITH_VERSION, AFTER = 1, 2, 4
