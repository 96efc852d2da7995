"""Hypothesis strategies for CDC streams: a source history, then a misbehaving delivery of it."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from replay_assets.core.events import ValidationContext

CTX = ValidationContext(dt.date(2020, 1, 1), dt.date(2030, 1, 1))
STORES = ["north", "south", "east"]
DATES = ["2026-01-01", "2026-01-02", "2026-01-03"]


@dataclass(frozen=True)
class Change:
    line: str
    key: tuple[str, int]
    version: int
    image: dict[str, Any] | None


def order_event(seq: int, order_id: str, line_no: int, version: int, image: dict[str, Any] | None) -> str:
    return json.dumps(
        {
            "event_id": f"e{seq}",
            "source_seq": seq,
            "schema_version": 1,
            "entity": "order_line",
            "op": "delete" if image is None else "upsert",
            "key": {"order_id": order_id, "line_no": line_no},
            "version": version,
            "event_time": "2026-01-01T00:00:00Z",
            "after": image,
        }
    )


@st.composite
def images(draw: st.DrawFn, order_id: str, line_no: int) -> dict[str, Any] | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    return {
        "order_id": order_id,
        "line_no": line_no,
        "store_id": draw(st.sampled_from(STORES)),
        "customer_id": "c1",
        "product_id": "p1",
        "business_date": draw(st.sampled_from(DATES)),
        "quantity": draw(st.integers(0, 5)),
        "amount_minor": draw(st.integers(0, 1000)),
        "cost_minor": draw(st.integers(0, 500)),
        "status": draw(st.sampled_from(["active", "active", "cancelled"])),
    }


@st.composite
def histories(draw: st.DrawFn) -> list[Change]:
    """Every key's changes with strictly increasing versions; source_seq unique and global."""
    changes: list[Change] = []
    for k in range(draw(st.integers(1, 6))):
        order_id, line_no = f"o{k // 2}", k % 2 + 1
        versions = sorted(draw(st.sets(st.integers(1, 50), min_size=1, max_size=4)))
        for version in versions:
            image = draw(images(order_id, line_no))
            changes.append(Change("", (order_id, line_no), version, image))
    seqs = draw(st.permutations(range(1, len(changes) + 1)))
    return [
        Change(order_event(seq, c.key[0], c.key[1], c.version, c.image), c.key, c.version, c.image)
        for seq, c in zip(seqs, changes, strict=True)
    ]


@st.composite
def deliveries(draw: st.DrawFn, history: list[Change]) -> list[list[str]]:
    """Shuffle, duplicate and cut into load dates: at-least-once, any order."""
    lines = [c.line for c in history]
    lines += draw(st.lists(st.sampled_from(lines), max_size=len(lines))) if lines else []
    lines = draw(st.permutations(lines))
    cuts = sorted(draw(st.sets(st.integers(0, len(lines)), max_size=3)))
    bounds = [0, *cuts, len(lines)]
    return [list(lines[a:b]) for a, b in itertools.pairwise(bounds)]


def truth(history: list[Change]) -> dict[tuple[str, int], tuple[int, dict[str, Any] | None]]:
    best: dict[tuple[str, int], tuple[int, dict[str, Any] | None]] = {}
    for c in history:
        if c.key not in best or c.version > best[c.key][0]:
            best[c.key] = (c.version, c.image)
    return best
