"""Landing a delivery (``Unit.land_batch``) gives the same rows on every store: raw receipts,
staged events, rejections, schema-gate violations, the manifest and its files, upcasts and
source records, for lines every tier decides (the grammar, DuckDB's JSON path on one side, the
oracle), and the same refusals: a batch id reused with other content, a file that does not match
its manifest (nothing of it lands)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import Limits
from replay_assets.storage.landing import area
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets_tests import sail_server
from replay_assets_tests.storage.test_validation_fast_path import lines as fast_path_lines
from replay_assets_tests.stores import SPARK_KINDS, STORES, Opened, make_store, open_store, table_rows

NOW = dt.datetime(2026, 1, 10, 12, tzinfo=dt.UTC)
CTX = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 1, 11))
TABLES = (
    "raw_receipts",
    "staged_events",
    "rejected_events",
    "batch_violations",
    "manifests",
    "landed_files",
    "upcast_events",
    "source_records",
)


def _event(seq: int, *, sort: bool = False, spaced: bool = False, **change: Any) -> str:
    body: dict[str, Any] = {
        "event_id": f"e{seq}",
        "source_seq": seq,
        "schema_version": 1,
        "entity": "order_line",
        "op": "upsert",
        "key": {"order_id": f"o{seq % 7}", "line_no": 1},
        "version": seq,
        "event_time": "2026-01-01T00:00:00Z",
        "after": {
            "order_id": f"o{seq % 7}",
            "line_no": 1,
            "store_id": f"s{seq % 3}",
            "customer_id": "c1",
            "product_id": "p1",
            "business_date": f"2026-01-0{1 + seq % 5}",
            "quantity": seq % 4,
            "amount_minor": 100 * seq,
            "cost_minor": 50,
            "status": "active",
        },
    }
    body.update(change)
    return json.dumps(body, sort_keys=sort, separators=None if spaced else (",", ":"))


LINES = [
    *(_event(n) for n in range(1, 9)),  # the grammar certifies these
    _event(9, sort=True),  # the other rendering it knows
    _event(10, spaced=True),  # another layout of a valid event: a slower tier decides it
    _event(11, op="delete", after=None),
    json.dumps(
        {
            "event_id": "c1",
            "source_seq": 12,
            "schema_version": 1,
            "entity": "customer",
            "op": "upsert",
            "key": {"customer_id": "c1"},
            "event_time": "2026-01-01T00:00:00Z",
            "after": {"customer_id": "c1", "name": "Ada", "segment": "retail"},
        }
    ),
    "",
    _event(13, surprise=1),  # an unknown field
    _event(14).replace('"source_seq":14', '"source_seq":14,"source_seq":14'),  # a duplicated key
    _event(15, event_id="bad id"),
    _event(16, after={**json.loads(_event(16))["after"], "business_date": "2027-01-01"}),
    "not json at all",
    _event(17, schema_version=2),  # a version nothing reads: the batch is blocked
]


@pytest.fixture(params=STORES)
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    with open_store(request, request.param, tmp_path) as found:
        yield found


def _deliver(landing: Path, batch_id: str, lines: list[str]) -> area.Seen:
    write_delivery(landing, "erp", "2026-01-02", batch_id, lines, ready_at="2026-01-02T01:00:00Z")
    [seen] = [s for s in area.scan(landing, Limits()) if s.manifest and s.manifest.batch_id == batch_id]
    return seen


def _land(opened: Opened, seen: area.Seen) -> Any:
    assert seen.manifest is not None
    files = area.delivery_files(seen.path.parent, seen.manifest)
    with opened.store.transaction() as unit:
        return unit.landing.land_batch(seen.manifest, files=files, ctx=CTX, now=NOW)


def _landed(opened: Opened) -> dict[str, list[tuple[object, ...]]]:
    return {table: table_rows(opened, table) for table in TABLES}


@pytest.mark.parametrize("engine", SPARK_KINDS)
def test_a_delivery_lands_as_the_same_rows_on_every_store(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str
) -> None:
    seen = _deliver(tmp_path / "landing", "B1", LINES)
    landed = {}
    for kind in ("duckdb", engine):
        with open_store(request, kind, tmp_path / kind) as opened:
            result = _land(opened, seen)
            assert (result.new, result.source_events, result.rejected, result.violations) == (True, 18, 5, 1)
            landed[kind] = _landed(opened)
    assert landed[engine] == landed["duckdb"]
    assert len(landed["duckdb"]["staged_events"]) == 12 and len(landed["duckdb"]["raw_receipts"]) == 18


def test_the_same_delivery_again_lands_nothing_and_a_reused_batch_id_fails_closed(
    opened: Opened, tmp_path: Path
) -> None:
    seen = _deliver(tmp_path / "landing", "B1", LINES[:3])
    assert _land(opened, seen).new
    before = _landed(opened)
    assert not _land(opened, seen).new
    other = _deliver(tmp_path / "other", "B1", LINES[3:5])
    with pytest.raises(ReplayError) as refused:
        _land(opened, other)
    assert refused.value.code is ErrorCode.BATCH_ID_REUSED
    assert _landed(opened) == before


def test_a_file_that_does_not_match_its_manifest_lands_nothing(opened: Opened, tmp_path: Path) -> None:
    seen = _deliver(tmp_path / "landing", "B1", LINES[:5])
    assert seen.manifest is not None
    data_file = seen.path.parent / seen.manifest.files[0].path
    data_file.write_text(data_file.read_text().replace('"quantity":1', '"quantity":2'))
    with pytest.raises(area.DeliveryMismatch):
        _land(opened, seen)
    assert all(rows == [] for rows in _landed(opened).values())


@contextmanager
def _opened(kind: str, root: Path, remote: str = "") -> Iterator[Opened]:
    """A store of ``kind`` on a warehouse under ``root`` (Spark: on the server at ``remote``)."""
    store, close = make_store(kind, root / "warehouse", remote)
    try:
        yield Opened(store, lambda: _one_store_only(), kind, root / "warehouse", remote)
    finally:
        close()


def _one_store_only() -> Opened:
    raise AssertionError("this test opens one store per warehouse")


_OPENED: list[str] = []  # what this process opens while a test watches (``_watch``)
_WATCHING: list[str] = []


def _watch(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _WATCHING and isinstance(args[0], str | bytes | Path):
        _OPENED.append(str(args[0]))


def test_on_spark_the_engine_reads_the_delivery_and_this_process_never_opens_it(tmp_path: Path) -> None:
    """With the engine in a process of its own, the client lands a delivery without opening
    its files (nor their folder): only the engine reads them, and the rows are DuckDB's."""
    seen = _deliver(tmp_path / "landing", "B1", LINES)
    with _opened("duckdb", tmp_path / "duckdb") as duck:
        _land(duck, seen)
        expected = _landed(duck)
    sys.addaudithook(_watch)  # a hook stays for the process; it records only while watched
    with sail_server.standalone() as remote, _opened("spark", tmp_path / "spark", remote) as opened:
        _WATCHING.append("on")
        try:
            result = _land(opened, seen)
        finally:
            _WATCHING.clear()
        assert (result.new, result.source_events, result.rejected, result.violations) == (True, 18, 5, 1)
        assert _landed(opened) == expected
    delivery = str(seen.path.parent)
    assert [name for name in _OPENED if name.startswith(delivery) or name.endswith(".jsonl")] == []


def _hostile() -> st.SearchStrategy[str]:
    """Lines of every kind a source may deliver: the fast path's strategy (layouts, odd values),
    the canonical renderings, and what only a stream has (blank, CRLF, over-long, escapes)."""
    canonical = st.builds(
        lambda seq, sort, change: _event(seq, sort=sort, **change),
        st.integers(1, 40),
        st.booleans(),
        st.sampled_from(
            [
                {},
                {"op": "delete", "after": None},
                {"version": 10**12},
                {"version": 10**12 + 1},
                {"source_seq": 2**70},
                {"event_id": "e\u00e91"},
                {"event_time": "2024-02-29T23:59:59.123456+00:00"},
            ]
        ),
    )
    odd = st.sampled_from(
        [
            "",
            "   ",
            "\u2003",
            _event(3) + "\r",
            _event(4).replace('"e4"', '"\\u0065\\u0034"'),
            _event(5) + " " * 600,  # over the stream's line limit below
            '{"event_id":"e6"}',
        ]
    )
    return st.one_of(canonical, canonical, fast_path_lines(), odd)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_hostile(), min_size=1, max_size=25))
def test_a_hostile_stream_lands_as_the_same_rows_on_spark_as_on_duckdb(sail: str, lines: list[str]) -> None:
    """The engine's tiers (the read task, the canonical-line rule, the oracle task) against
    DuckDB's (the grammar workers, DuckDB's JSON path, the oracle): every row of every table."""
    ctx = dataclasses.replace(CTX, max_line_bytes=512)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        seen = _deliver(root / "landing", "B1", lines)
        assert seen.manifest is not None
        files = area.delivery_files(seen.path.parent, seen.manifest)
        landed = {}
        for kind in ("duckdb", "spark"):
            with _opened(kind, root / kind, sail if kind == "spark" else "") as opened:
                with opened.store.transaction() as unit:
                    unit.landing.land_batch(seen.manifest, files=files, ctx=ctx, now=NOW)
                landed[kind] = _landed(opened)
        assert landed["spark"] == landed["duckdb"]
