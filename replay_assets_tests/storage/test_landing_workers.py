"""Landing through worker processes gives the warehouse exactly what landing in-process gives:
every line numbered as in the file across slices, each through the tier that certifies it. A
certified line's receipt keeps no second copy of its text: ``raw_payloads`` renders it again,
exactly, in the layout it came in."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.errors import ReplayError
from replay_assets.storage.landing import ingest, parallel, workers
from replay_assets.usecases.land import land
from replay_assets_tests.storage.test_bad_input import D1, deliver, event, make_pipeline, rows
from replay_assets_tests.storage.test_certify import renderings, variants

TABLES = {
    "raw_receipts": "SELECT * EXCLUDE (landed_at) FROM raw_receipts",
    "staged_events": "SELECT * FROM staged_events",
    "rejected_events": "SELECT * FROM rejected_events",
}


def lines() -> list[str]:
    """Compact and sorted renderings (the grammar), spaced ones (DuckDB's JSON path), lines the
    oracle rejects, blank lines and duplicates, interleaved so every slice gets each kind."""
    out = []
    for i in range(1, 121):
        body: dict[str, Any] = json.loads(event(i, f"o{i % 17}", amount_minor=i))
        kind = i % 6
        if kind == 0:
            out.append(json.dumps(body))
        elif kind == 1:
            out.append(json.dumps(body, sort_keys=True, separators=(",", ":")))
        elif kind == 2:
            out.append(json.dumps({**body, "event_id": "bad id"}, separators=(",", ":")))
        elif kind == 3:
            out.append("")
        else:
            out.append(json.dumps(body, separators=(",", ":")))
    return out + out[:10]  # a redelivered tail: the same event ids again


def landed(home: Path, pool_min_lines: int) -> dict[str, list[tuple[Any, ...]]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "POOL_MIN_LINES", pool_min_lines)
        patch.setattr(parallel, "SLICE_LINES", pool_min_lines)
        p = make_pipeline(home)
        deliver(p, D1, "B1", lines())
        (batch,) = land(p, D1)
    tables = {name: sorted(rows(p, sql), key=repr) for name, sql in TABLES.items()}
    (cpu,) = rows(p, "SELECT cpu_seconds FROM costs WHERE step = 'land'")[0]
    tables["costs"] = [(batch.worker_cpu_seconds > 0, cpu >= batch.worker_cpu_seconds)]
    return tables


def test_worker_processes_land_what_the_landing_process_lands(tmp_path: Path) -> None:
    inline = landed(tmp_path / "inline", pool_min_lines=10**9)
    split = landed(tmp_path / "workers", pool_min_lines=20)  # 130 lines: one slice per worker
    assert [w for w in workers.pool().workers if w.alive()], "no worker process was used"
    assert {**split, "costs": None} == {**inline, "costs": None}
    # the landing's recorded CPU time includes its workers' (in-process, its own time has it)
    assert split["costs"] == [(True, True)] and inline["costs"] == [(False, True)]
    p = make_pipeline(tmp_path / "workers")
    assert rows(p, "SELECT count(*) FROM raw_payloads WHERE sha256(payload) <> payload_sha256") == [(0,)]
    assert len(inline["raw_receipts"]) == 130 - 22  # blank lines are not receipts
    assert len(inline["rejected_events"]) == 22  # the bad ids, redelivered ones included
    assert len(inline["staged_events"]) == 130 - 22 - 22


def test_a_certified_lines_receipt_is_its_staged_event_rendered_again(tmp_path: Path) -> None:
    """Every layout the grammar certifies (either field order, each entity and op, version and
    after present or not) keeps no payload, and ``raw_payloads`` gives back the delivered line."""
    p = make_pipeline(tmp_path)
    today = {"event_time": "2026-01-10T00:00:00Z"}
    delivered = []
    for i, shape in enumerate(variants(), 1):
        body = {**shape, **today, "event_id": f"E{i}", "source_seq": i}
        if "version" in body:
            body["version"] = i
        if isinstance(body.get("after"), dict) and "business_date" in body["after"]:
            body["after"] = {**body["after"], "business_date": "2026-01-05"}
        delivered += renderings(body)
    delivered.append(json.dumps(json.loads(delivered[0])))  # spaced: kept as delivered
    deliver(p, D1, "B1", delivered)
    land(p, D1)
    stored = rows(p, "SELECT line_number, payload IS NULL, rendering FROM raw_receipts ORDER BY 1")
    assert [kept for _, kept, _ in stored] == [True] * (len(delivered) - 1) + [False]
    assert len({code for _, _, code in stored[:-1]}) == 2 * 2 * 3  # layouts x version x after forms
    sql = "SELECT payload, sha256(payload) = payload_sha256 FROM raw_payloads ORDER BY line_number"
    given_back = rows(p, sql)
    assert given_back == [(line, True) for line in delivered]


def _fails(_: object) -> None:
    raise ValueError("a value that must not reach the message")


def test_a_worker_that_dies_or_raises_fails_the_batch_and_the_pool_recovers() -> None:
    pool = workers.pool()
    with pytest.raises(workers.WorkerFailed, match="died"):
        pool.submit(os._exit, [3, 3]).results()
    with pytest.raises(workers.WorkerFailed, match=r"failed: ValueError$"):
        pool.submit(_fails, [None]).results()
    assert pool.submit(abs, [-2, -5]).results() == [2, 5]  # new workers took over


def test_a_delivery_refused_after_its_last_chunk_leaves_the_workers_clean(tmp_path: Path) -> None:
    """A file is verified against its manifest once read, when its last chunk is already with
    the workers: what they prepared for it must not reach the next landing."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (("POOL_MIN_LINES", 20), ("SLICE_LINES", 20), ("CHUNK_LINES", 50)):
            patch.setattr(parallel, name, value)
        p = make_pipeline(tmp_path)
        data = deliver(p, D1, "B1", lines()).parent / "B1.jsonl"
        data.write_text(data.read_text().replace('"amount_minor":7', '"amount_minor":8', 1))
        with pytest.raises(ReplayError, match="does not match the manifest"):
            land(p, D1)
        deliver(p, D1, "B1", lines())  # delivered again, whole
        (batch,) = land(p, D1)
    assert batch.new
    assert rows(p, "SELECT count(*) FROM staged_events") == [(130 - 22 - 22,)]
    assert rows(p, "SELECT count(*) FROM raw_payloads WHERE sha256(payload) <> payload_sha256") == [(0,)]


def test_chunks_landed_in_many_calls_land_every_line_once_and_in_place(tmp_path: Path) -> None:
    """With chunks of 20 lines cut into slices of 10 and the landing thread called every 40
    lines, each call keeps several workers' files: every line lands once, with its own line
    number, exactly as the landing process lands the file in one go."""
    inline = landed(tmp_path / "inline", pool_min_lines=10**9)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "CHUNK_LINES", 20)
        patch.setattr(ingest, "LAND_LINES", 40)
        sliced = landed(tmp_path / "sliced", pool_min_lines=10)
    assert {**sliced, "costs": None} == {**inline, "costs": None}


def test_a_file_the_grammar_certifies_lands_as_the_workers_files(tmp_path: Path) -> None:
    """No row of a file the grammar certifies whole is copied into the warehouse: its workers'
    files are under the home's segments, registered with their rows, bytes and sha256, and the
    views read every line from them once, numbered as in the file."""
    size = 3 * 2_000 + 500
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "CHUNK_LINES", 2_000)
        patch.setattr(parallel, "POOL_MIN_LINES", 1_000)
        patch.setattr(parallel, "SLICE_LINES", 1_000)
        p = make_pipeline(tmp_path)
        compact = [
            json.dumps(json.loads(event(i, f"o{i}")), separators=(",", ":")) for i in range(1, size + 1)
        ]
        deliver(p, D1, "B1", compact)
        (batch,) = land(p, D1)
    assert batch.new
    assert rows(p, "SELECT count(*) FROM staged_rows UNION ALL SELECT count(*) FROM receipt_rows") == [
        (0,),
        (0,),
    ]
    registered = rows(p, "SELECT kind, path, rows, bytes, sha256 FROM landing_segments ORDER BY kind, path")
    assert {kind for kind, *_ in registered} == {"receipts", "staged"}
    for kind in ("receipts", "staged"):
        assert sum(n for k, _path, n, _bytes, _sha in registered if k == kind) == size
        assert len([k for k, *_ in registered if k == kind]) >= 4  # a file per worker's slice
    for _kind, path, _rows, size_bytes, sha in registered:
        data = (tmp_path / "segments" / path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size_bytes, sha)
    assert rows(
        p, "SELECT count(DISTINCT line_number), min(line_number), max(line_number) FROM staged_events"
    ) == [(size, 1, size)]
    assert rows(p, "SELECT count(*), count(DISTINCT line_number) FROM raw_receipts") == [(size, size)]
