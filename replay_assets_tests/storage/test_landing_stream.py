"""Delivery files are landed as a stream: chunks of whole lines, numbered as in the file, read
ahead in a thread, verified against the manifest in the same pass."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.manifest import ManifestFile
from replay_assets.storage import landing_area
from replay_assets.storage.landing_area import DeliveryFile, DeliveryMismatch
from replay_assets.storage.prefetch import hashed_chunks

LINE = st.sampled_from(["", " ", '{"a":1}', "x", "é\u2028ü", "\x1c", '{"b":"\u00e9"}'])


def delivery(tmp_path: Path, data: bytes, events: int | None = None) -> DeliveryFile:
    path = tmp_path / "B1.jsonl"
    path.write_bytes(data)
    lines = data.decode("utf-8", errors="replace").split("\n")
    lines = lines[:-1] if lines and lines[-1] == "" else lines
    counted = sum(1 for line in lines if line.strip()) if events is None else events
    return DeliveryFile(ManifestFile("B1.jsonl", hashlib.sha256(data).hexdigest(), counted, len(data)), path)


@settings(max_examples=60, deadline=None)
@given(st.lists(LINE, max_size=40), st.booleans(), st.integers(1, 7), st.integers(1, 64))
def test_chunks_are_the_files_lines_numbered_from_one(
    lines: list[str], trailing_newline: bool, size: int, block: int
) -> None:
    data = ("\n".join(lines) + ("\n" if trailing_newline and lines else "")).encode()
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(landing_area, "BLOCK_BYTES", block)
        f = delivery(Path(folder), data)
        chunks = list(hashed_chunks(f.chunks(size)))
    expected = data.decode().split("\n")
    expected = expected[:-1] if expected and expected[-1] == "" else expected
    assert [line for c in chunks for line in c.lines] == expected
    assert all(0 < len(c.lines) <= size for c in chunks)
    assert [c.first for c in chunks] == [
        1 + sum(len(c.lines) for c in chunks[:i]) for i in range(len(chunks))
    ]
    for c in chunks:
        assert c.sha256 == [hashlib.sha256(line.encode()).hexdigest() for line in c.lines]


def test_a_file_that_differs_from_its_manifest_fails_after_its_last_chunk(tmp_path: Path) -> None:
    f = delivery(tmp_path, b'{"a":1}\n{"a":2}\n', events=3)
    with pytest.raises(DeliveryMismatch, match=r"B1\.jsonl has 2 events, manifest says 3"):
        list(hashed_chunks(f.chunks(1)))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    f = delivery(tmp_path, b'{"a":1}\n')
    f.path.unlink()
    with pytest.raises(DeliveryMismatch, match=r"file B1\.jsonl is missing"):
        list(hashed_chunks(f.chunks()))


def test_a_consumer_that_stops_early_leaves_no_reader_behind(tmp_path: Path) -> None:
    f = delivery(tmp_path, b"".join(b'{"a":%d}\n' % i for i in range(50)))
    reader = hashed_chunks(f.chunks(2))
    assert next(reader).lines == ['{"a":0}', '{"a":1}']
    reader.close()
    assert not [t for t in threading.enumerate() if t.name == "replay-prefetch"]
