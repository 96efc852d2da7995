"""A load date prepared ahead while the one before it applied (``storage/landing/prefetch.py``,
enabled by ``replay-assets run``) lands exactly what reading its files then lands: the same
receipts, staged events, rejections and counts, line numbers included, across chunks and worker
slices. What was prepared for another reading (another validation context) is not used, and a
file changed after it was prepared lands as its manifest declares it."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from replay_assets.core.manifest import Limits
from replay_assets.storage.landing import parallel, prefetch
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets_tests.helpers import settings_for
from replay_assets_tests.storage.test_bad_input import D1, D2, NOW, deliver, event, rows
from replay_assets_tests.storage.test_landing_workers import TABLES, lines

LINE_BYTES = 600
TABLES = {
    **TABLES,
    "manifests": "SELECT * EXCLUDE (landed_at) FROM manifests",
    "landed_files": "SELECT * FROM landed_files",
}


def second_day() -> list[str]:
    """Another day's lines: the first day's kinds, new event ids, and a line over the line
    limit (rejected while it is read, so it never reaches a worker)."""
    out = [line.replace('"E', '"F') for line in lines()]
    long = json.loads(event(500, "o500"))
    long["after"]["product_id"] = "p" * (LINE_BYTES // 4)
    long["event_id"] = "F" + "9" * (LINE_BYTES // 2)
    out.insert(37, json.dumps(long, separators=(",", ":")))
    return out


def pipeline(home: Path, now: str = NOW) -> Pipeline:
    return Pipeline(settings_for(home, now, limits=Limits(line_bytes=LINE_BYTES)))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 50 lines in slices of 20 for the workers: several of each in every file."""
    monkeypatch.setattr(parallel, "POOL_MIN_LINES", 20)
    monkeypatch.setattr(parallel, "SLICE_LINES", 20)
    monkeypatch.setattr(parallel, "CHUNK_LINES", 50)


def landed(home: Path, ahead: bool) -> tuple[dict[str, list[tuple[Any, ...]]], int, int]:
    """Both days landed one after the other; with ``ahead``, the second was prepared while the
    test went on. Returns the tables, the files prepared ahead and the files landed from them."""
    p = pipeline(home)
    deliver(p, D1, "B1", lines())
    deliver(p, D2, "B2", second_day())
    deliver(p, D2, "B3", lines()[::-1])
    with prefetch.enabled(home / ".prefetch") if ahead else nullcontext():
        land(p, D1)
        prepared, folders = prefetch.ready_files(), prefetch.folders()
        land(p, D2)
        taken = prefetch.taken_files()
    assert not any(folder.exists() for folder in folders), "what was prepared ahead is removed"
    assert not (home / ".prefetch").exists()
    tables = {name: sorted(rows(p, sql), key=repr) for name, sql in TABLES.items()}
    return tables, prepared, taken


def test_a_day_prepared_ahead_lands_what_reading_it_lands(tmp_path: Path) -> None:
    read, _, _ = landed(tmp_path / "read", ahead=False)
    ahead, prepared, taken = landed(tmp_path / "ahead", ahead=True)
    assert (prepared, taken) == (2, 2), "the second day's two files were prepared and then taken"
    assert ahead == read
    assert [r[3] for r in read["rejected_events"] if r[5] == "LINE_TOO_LONG"] == [38]


def test_a_reading_under_another_context_is_not_used(tmp_path: Path) -> None:
    """The business-date window moves with the clock: a day prepared under yesterday's window
    is read again under today's."""
    p = pipeline(tmp_path)
    deliver(p, D1, "B1", lines())
    deliver(p, D2, "B2", second_day())
    with prefetch.enabled(tmp_path / ".prefetch"):
        land(p, D1)
        assert prefetch.ready_files() == 1
        land(pipeline(tmp_path, now="2026-03-01T12:00:00Z"), D2)
        assert prefetch.taken_files() == 0  # landed from the file
    assert rows(p, "SELECT count(*) FROM raw_receipts WHERE load_date = ?", [D2]) == [
        (len(second_day()) - 22,)
    ]


def test_a_file_changed_after_it_was_prepared_lands_as_declared(tmp_path: Path) -> None:
    """What was prepared is a reading of the declared file (its bytes matched the manifest), so
    landing it is landing the delivery; the same file changed before it is read blocks the date."""
    p = pipeline(tmp_path)
    deliver(p, D1, "B1", lines())
    path = deliver(p, D2, "B2", second_day())
    data = path.parent / "B2.jsonl"
    declared = data.read_bytes()
    with prefetch.enabled(tmp_path / ".prefetch"):
        land(p, D1)
        data.write_bytes(declared.replace(b'"F1"', b'"G1"'))
        land(p, D2)
        assert prefetch.taken_files() == 1
    stored = rows(
        p, "SELECT count(*) FROM raw_payloads WHERE load_date = ? AND payload LIKE '%\"G1\"%'", [D2]
    )
    assert stored == [(0,)]
    assert rows(p, "SELECT count(*) FROM manifests WHERE batch_id = 'B2'") == [(1,)]


def test_what_a_killed_run_left_is_removed_by_the_next(tmp_path: Path) -> None:
    left = tmp_path / ".prefetch" / "ahead-killed"
    left.mkdir(parents=True)
    (left / "0.0").mkdir()
    p = pipeline(tmp_path)
    deliver(p, D1, "B1", lines())
    deliver(p, D2, "B2", second_day())
    with prefetch.enabled(tmp_path / ".prefetch"):
        assert not left.exists()
        land(p, D1)
        (folder,) = prefetch.folders()
        assert folder.parent == tmp_path / ".prefetch" and folder.exists()
    assert not (tmp_path / ".prefetch").exists()


def test_without_a_folder_to_prepare_into_the_next_day_is_read(tmp_path: Path) -> None:
    """Preparing ahead never fails a landing: a home where the folder cannot be made (here a
    file has its name) lands the next day from its files."""
    p = pipeline(tmp_path)
    deliver(p, D1, "B1", lines())
    deliver(p, D2, "B2", second_day())
    (tmp_path / ".prefetch").write_text("not a folder")
    with prefetch.enabled(tmp_path / ".prefetch"):
        (tmp_path / ".prefetch").write_text("not a folder")  # enabled() cleared what it could
        land(p, D1)
        assert prefetch.folders() == []
        land(p, D2)
        assert prefetch.taken_files() == 0
    assert rows(p, "SELECT count(DISTINCT load_date) FROM manifests") == [(2,)]
