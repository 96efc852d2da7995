"""The grammars of ``core/line_grammar.py`` matched set-based, and the sha256 of texts: what
every tier of landing shares, in polars (Rust's ``regex`` and hashing), with no warehouse.

Importing this module runs no DuckDB code on purpose: the engine's landing task
(``storage/spark/landing_task.py``) imports it, and the Spark adapter reaches no DuckDB module.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import polars as pl
import polars_hash

from replay_assets.core.line_grammar import AFTER, GRAMMARS, SORTED, WITH_VERSION

# Rust's regex syntax takes the grammars as written; anchored, since ``contains`` searches
PATTERNS = [f"^(?:{grammar.pattern})$" for _, grammar, _ in GRAMMARS]
_ENTITY = pl.Series([entity for entity, _, _ in GRAMMARS], dtype=pl.String)
_SORTED = pl.Series([int(sort) for _, _, sort in GRAMMARS], dtype=pl.Int32)


def sha256_hex(name: str) -> pl.Expr:
    """The lowercase hex sha256 of each text's UTF-8 bytes (what ``hashlib`` gives; NULL stays
    NULL), in Rust: cheaper a line than ``hashlib``, which pays for a Python object."""
    return polars_hash.col(name).chash.sha2_256()


def matches(lines: Sequence[str], skip: Collection[int] = ()) -> pl.DataFrame:
    """The lines one of the grammars matches whole (``line_number``: the index in ``lines``;
    ``entity`` and ``sorted``: the grammar's), in line order."""
    frame = pl.DataFrame({"line": lines}, schema={"line": pl.String}).with_row_index("line_number")
    grammar = pl.repeat(-1, frame.height, dtype=pl.Int8, eager=True)
    rest = frame.filter(~pl.col("line_number").is_in(list(skip))) if skip else frame
    for index, pattern in enumerate(PATTERNS):
        if rest.is_empty():
            break
        hit = rest["line"].str.contains(pattern)
        grammar = grammar.scatter(rest.filter(hit)["line_number"], index)
        rest = rest.filter(~hit)
    matched = frame.with_columns(grammar=grammar).filter(pl.col("grammar") >= 0)
    return matched.with_columns(
        entity=_ENTITY.gather(matched["grammar"]), sorted=_SORTED.gather(matched["grammar"])
    )


def rendering() -> pl.Expr:
    """How a line a grammar matched was written (``core/line_grammar.py``'s code), from ``line``
    and ``sorted``: no text value holds a quote, so the field names are found only as fields."""
    line = pl.col("line")
    image, null = (
        line.str.contains('"after":{', literal=True),
        line.str.contains('"after":null', literal=True),
    )
    form = pl.when(image).then(2).when(null).then(1).otherwise(0)
    version = line.str.contains('"version":', literal=True).cast(pl.Int32)
    return (pl.col("sorted") * SORTED + version * WITH_VERSION + form * AFTER).cast(pl.Int8)
