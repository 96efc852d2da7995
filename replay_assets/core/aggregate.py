"""Daily aggregates and snapshot controls, from state (never from remembered deltas)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from replay_assets.core.events import canonical_json

HASH_CHUNK_ROWS = 200_000
JSON_ESCAPED = r'[\x00-\x1f"\\]'  # characters json.dumps(ensure_ascii=False) escapes
AGGREGATE_COLUMNS = (
    "store_id",
    "business_date",
    "order_count",
    "line_count",
    "units",
    "amount_minor",
    "cost_minor",
    "gross_profit_minor",
)


@dataclass(frozen=True)
class Controls:
    """Snapshot controls: active lines, distinct orders, units, amount, cost, gross profit."""

    active_lines: int
    distinct_orders: int
    units: int
    amount_minor: int
    cost_minor: int
    gross_profit_minor: int

    def as_tuple(self) -> tuple[int, ...]:
        return (
            self.active_lines,
            self.distinct_orders,
            self.units,
            self.amount_minor,
            self.cost_minor,
            self.gross_profit_minor,
        )


def aggregate_images(images: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Oracle: per (store_id, business_date) totals over active order lines, sorted by group."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    orders: dict[tuple[str, str], set[str]] = {}
    for img in images:
        if img["status"] != "active":
            continue
        gk = (img["store_id"], img["business_date"])
        g = groups.setdefault(
            gk,
            {
                "store_id": gk[0],
                "business_date": gk[1],
                "line_count": 0,
                "units": 0,
                "amount_minor": 0,
                "cost_minor": 0,
            },
        )
        orders.setdefault(gk, set()).add(img["order_id"])
        g["line_count"] += 1
        g["units"] += img["quantity"]
        g["amount_minor"] += img["amount_minor"]
        g["cost_minor"] += img["cost_minor"]
    out = []
    for gk in sorted(groups):
        g = groups[gk]
        g["order_count"] = len(orders[gk])
        g["gross_profit_minor"] = g["amount_minor"] - g["cost_minor"]
        out.append({c: g[c] for c in AGGREGATE_COLUMNS})
    return out


def aggregate_frame(lines: pl.DataFrame) -> pl.DataFrame:
    """Set-based :func:`aggregate_images`: ``lines`` has the order-line image columns."""
    return (
        lines.filter(pl.col("status") == "active")
        .group_by("store_id", "business_date")
        .agg(
            [
                pl.col("order_id").n_unique().cast(pl.Int64).alias("order_count"),
                pl.len().cast(pl.Int64).alias("line_count"),
                pl.col("quantity").sum().cast(pl.Int64).alias("units"),
                pl.col("amount_minor").sum().cast(pl.Int64).alias("amount_minor"),
                pl.col("cost_minor").sum().cast(pl.Int64).alias("cost_minor"),
            ]
        )
        .with_columns((pl.col("amount_minor") - pl.col("cost_minor")).alias("gross_profit_minor"))
        .select(AGGREGATE_COLUMNS)
        .sort("store_id", "business_date")
    )


def controls_of(lines: pl.DataFrame) -> Controls:
    """Controls of a snapshot over its active order lines."""
    active = lines.filter(pl.col("status") == "active")
    amount = int(active["amount_minor"].sum() or 0)
    cost = int(active["cost_minor"].sum() or 0)
    return Controls(
        active.height,
        int(active["order_id"].n_unique()) if active.height else 0,
        units=int(active["quantity"].sum() or 0),
        amount_minor=amount,
        cost_minor=cost,
        gross_profit_minor=amount - cost,
    )


def content_sha256(frame: pl.DataFrame, sort_by: Iterable[str]) -> str:
    """Order-independent content hash: sha256 over canonical JSON rows sorted by ``sort_by``.
    Rendered set-based when every column is text or integer and no text needs a JSON escape
    (the same bytes ``canonical_json`` writes); row by row otherwise."""
    digest = RowsDigest()
    digest.update(frame.sort(list(sort_by)) if frame.height else frame)
    return digest.hexdigest()


class RowsDigest:
    """:func:`content_sha256` fed part by part: rows already in key order, in consecutive
    frames (a streamed snapshot); the digest equals that of all the parts as one frame."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._started = False

    def update(self, ordered: pl.DataFrame) -> None:
        if not ordered.height:
            return
        rendered = _json_rows(ordered)
        if rendered is None:
            texts = ["\n".join(canonical_json(row) for row in ordered.iter_rows())]
        else:
            texts = [
                rendered.slice(start, HASH_CHUNK_ROWS).str.join("\n").item()
                for start in range(0, rendered.len(), HASH_CHUNK_ROWS)
            ]
        for text in texts:
            self._digest.update((("\n" if self._started else "") + text).encode("utf-8"))
            self._started = True

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


@dataclass(frozen=True)
class ControlsPart:
    """Controls of one part of a snapshot streamed in (order_id, line_no) order, with the first
    and last order id among its active lines (an order may straddle two parts)."""

    controls: Controls
    first_active_order: str | None
    last_active_order: str | None


def controls_part(lines: pl.DataFrame) -> ControlsPart:
    active = lines.filter(pl.col("status") == "active")["order_id"]
    return ControlsPart(
        controls_of(lines), active[0] if len(active) else None, active[-1] if len(active) else None
    )


def combine_controls(parts: Iterable[ControlsPart]) -> Controls:
    """The controls of the whole snapshot from its parts: sums add up; an order whose active
    lines straddle a boundary is counted once."""
    total = [0] * 6
    last: str | None = None
    for part in parts:
        values = part.controls.as_tuple()
        total = [t + v for t, v in zip(total, values, strict=True)]
        if last is not None and part.first_active_order == last:
            total[1] -= 1
        last = part.last_active_order if part.last_active_order is not None else last
    return Controls(*total)


def _json_rows(frame: pl.DataFrame) -> pl.Series | None:
    """Each row as ``canonical_json(row)`` would write it, or None when that needs Python."""
    parts: list[pl.Expr] = []
    for name, dtype in frame.schema.items():
        column = pl.col(name)
        if dtype == pl.String:
            parts.append(
                pl.when(column.is_null())
                .then(pl.lit("null"))
                .otherwise(pl.concat_str([pl.lit('"'), column, pl.lit('"')]))
            )
        elif dtype.is_integer():
            parts.append(column.cast(pl.String).fill_null("null"))
        else:
            return None
        parts.append(pl.lit(","))
    if not parts:
        return None
    texts = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    if (
        texts
        and frame.select(pl.any_horizontal(pl.col(t).str.contains(JSON_ESCAPED).any() for t in texts)).item()
    ):
        return None
    return frame.select(pl.concat_str([pl.lit("["), *parts[:-1], pl.lit("]")]).alias("row"))["row"]
