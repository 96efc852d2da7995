"""Delivery files are landed as a stream: chunks of whole lines, numbered as in the file,
verified against the manifest in the same pass; preparing a chunk hashes each line's raw bytes."""

from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import RejectReason
from replay_assets.core.events import ValidationContext
from replay_assets.core.manifest import ManifestFile
from replay_assets.storage.home import files as safe_files
from replay_assets.storage.landing.area import DeliveryFile, DeliveryMismatch
from replay_assets.storage.landing.prepare import LINES_FILE, job, prepare

LINE = st.sampled_from(
    [
        *(b"", b" ", b'{"a":1}', b"x", "é\u2028ü".encode(), b"\x1c", '{"b":"\u00e9"}'.encode()),
        *(b"\xff", b'{"a":"\xc3"}', b" \xa0", b"y" * 9, b" " * 9, "é".encode() * 5),  # not UTF-8; too long
    ]
)
LIMIT = 8  # line bytes
CTX = ValidationContext(dt.date(2026, 1, 1), dt.date(2026, 12, 31), max_line_bytes=LIMIT)


def delivery(tmp_path: Path, data: bytes, events: int | None = None) -> DeliveryFile:
    path = tmp_path / "B1.jsonl"
    path.write_bytes(data)
    lines = data.split(b"\n")
    lines = lines[:-1] if lines and lines[-1] == b"" else lines
    counted = sum(1 for text, reason in map(expected_line, lines) if text.strip() or reason)
    counted = counted if events is None else events
    return DeliveryFile(ManifestFile("B1.jsonl", hashlib.sha256(data).hexdigest(), counted, len(data)), path)


def expected_line(raw: bytes) -> tuple[str, RejectReason | None]:
    if len(raw) > LIMIT:
        return raw.decode("utf-8", "backslashreplace"), RejectReason.LINE_TOO_LONG
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), RejectReason.INVALID_UTF8


@settings(max_examples=100, deadline=None)
@given(st.lists(LINE, max_size=40), st.booleans(), st.integers(1, 7), st.integers(1, 64))
def test_chunks_are_the_files_lines_numbered_from_one(
    lines: list[bytes], trailing_newline: bool, size: int, block: int
) -> None:
    """Whatever the read block: every line in order, numbered as in the file; a line over the
    limit or not UTF-8 is a problem of that line carrying the sha256 of its raw bytes, never a
    repaired line, and the other lines are untouched."""
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(safe_files, "BLOCK_BYTES", block)
        f = delivery(Path(folder), data)
        chunks = list(f.chunks(size, line_bytes=LIMIT))
        digests = []
        for i, (first, lines_, problems_) in enumerate(chunks):
            out = Path(folder) / str(i)
            out.mkdir()
            prepare(job(first, lines_, problems_, ctx=CTX, folder=str(out)))
            digests += pl.read_parquet(out / LINES_FILE)["sha256"].to_list()
    raw = data.split(b"\n")
    raw = raw[:-1] if raw and raw[-1] == b"" else raw
    expected = [expected_line(r) for r in raw]
    assert [line for c in chunks for line in c[1]] == [text for text, _ in expected]
    problems = {n: p for c in chunks for n, p in c[2].items()}
    assert {n: p.reason for n, p in problems.items()} == {
        n: reason for n, (_, reason) in enumerate(expected, 1) if reason
    }
    assert all(0 < len(c[1]) <= size for c in chunks)
    assert [c[0] for c in chunks] == [1 + sum(len(c[1]) for c in chunks[:i]) for i in range(len(chunks))]
    present = [r for n, r in enumerate(raw, 1) if expected[n - 1][0].strip() or n in problems]
    assert digests == [hashlib.sha256(r).hexdigest() for r in present]  # blank lines are not receipts


def test_a_file_that_differs_from_its_manifest_fails_after_its_last_chunk(tmp_path: Path) -> None:
    f = delivery(tmp_path, b'{"a":1}\n{"a":2}\n', events=3)
    with pytest.raises(DeliveryMismatch, match=r"B1\.jsonl has 2 events, manifest says 3"):
        list(f.chunks(1))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    f = delivery(tmp_path, b'{"a":1}\n')
    f.path.unlink()
    with pytest.raises(DeliveryMismatch, match=r"file B1\.jsonl is missing"):
        list(f.chunks())
