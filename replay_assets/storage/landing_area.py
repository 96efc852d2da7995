"""The landing area on disk: ``$HOME/landing/<source>/<load_date>/<batch_id>.manifest.json``.

Reading is cheap (sensor-grade: stat only) or verified (sha256 and event counts). Writing a
delivery is crash-safe: data first, manifest last, each via temp file, fsync and rename.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from replay_assets.core.events import canonical_json
from replay_assets.core.manifest import (
    MANIFEST_SUFFIX,
    FileFacts,
    Limits,
    Manifest,
    ManifestError,
    ManifestFile,
    cheap_readiness,
    parse_manifest,
    verify_file,
)
from replay_assets.core.plan import Delivery

BLOCK_BYTES = 16 << 20  # read size when streaming a delivery file
CHUNK_LINES = 250_000  # lines landed per statement: bounds memory whatever the file's size


@dataclass(frozen=True)
class Seen:
    """One manifest file found in the landing area: parsed, or the reason it cannot be."""

    path: Path
    manifest: Manifest | None
    error: str | None


def scan(landing: Path, limits: Limits) -> list[Seen]:
    """Every manifest under ``landing``, sorted by path; unreadable ones carry their reason."""
    found = []
    for path in sorted(landing.glob(f"*/*/*{MANIFEST_SUFFIX}")):
        try:
            if path.stat().st_size > limits.manifest_bytes:
                raise ManifestError(f"manifest exceeds {limits.manifest_bytes} bytes")
            manifest = parse_manifest(path.read_text(encoding="utf-8"), limits)
            _check_place(path, manifest)
            found.append(Seen(path, manifest, None))
        except (ManifestError, UnicodeDecodeError, OSError) as exc:
            found.append(Seen(path, None, str(exc)))
    return found


def _check_place(path: Path, manifest: Manifest) -> None:
    if path.name != f"{manifest.batch_id}{MANIFEST_SUFFIX}":
        raise ManifestError("manifest file name is not <batch_id>.manifest.json")
    if path.parent.name != manifest.load_date or path.parent.parent.name != manifest.source:
        raise ManifestError("manifest is not under <source>/<load_date>/ of its own fields")


def file_facts(folder: Path, manifest: Manifest) -> dict[str, FileFacts]:
    facts = {}
    for f in manifest.files:
        try:
            stat = (folder / f.path).stat()
            facts[f.path] = FileFacts(True, stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:
            facts[f.path] = FileFacts(False, 0)
    return facts


def to_delivery(seen: Seen, now: dt.datetime, limits: Limits) -> Delivery:
    """The plan's view of a parsed manifest, with the cheap readiness verdict."""
    m = seen.manifest
    assert m is not None
    facts = file_facts(seen.path.parent, m)
    reason = cheap_readiness(m, facts, now, limits)
    fingerprint = canonical_json(sorted((name, f.size, f.modified_ns) for name, f in facts.items()))
    return Delivery(
        m.source,
        m.batch_id,
        m.load_date,
        m.sha256,
        m.ready_at.isoformat(),
        f"{reason} ({seen.path.name})" if reason else None,
        m.supersedes,
        fingerprint,
    )


class DeliveryMismatch(Exception):
    """A delivery file that is missing or does not match its manifest (names the file)."""


@dataclass(frozen=True)
class DeliveryFile:
    """One file of a delivery, read once as a stream when it lands: a load date holds one chunk
    of lines at a time, never a whole file, and the sha256 and event count are checked in the
    same pass."""

    declared: ManifestFile
    path: Path

    @property
    def name(self) -> str:
        return self.declared.path

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def chunks(self, size: int = CHUNK_LINES) -> Generator[tuple[int, list[str]], None, None]:
        """Every line, empty ones included (so numbers match the file), as ``(number of the
        first line, lines)`` of at most ``size`` lines. After the last chunk the file is verified
        against its manifest; a mismatch raises :class:`DeliveryMismatch`, so the caller must
        discard what it did with the chunks (the landing transaction rolls back)."""
        digest = hashlib.sha256()
        number, events = 1, 0
        pending: list[str] = []
        try:
            with self.path.open("rb") as fh:
                for lines in _line_blocks(self.name, fh, digest):
                    events += sum(1 for line in lines if line[:1] == "{" or line.strip())
                    pending += lines
                    while len(pending) >= size:
                        yield number, pending[:size]
                        number, pending = number + size, pending[size:]
                if pending:
                    yield number, pending
        except FileNotFoundError as missing:
            raise DeliveryMismatch(f"file {self.name} is missing") from missing
        problem = verify_file(self.declared, digest.hexdigest(), events)
        if problem:
            raise DeliveryMismatch(problem)


def delivery_files(folder: Path, manifest: Manifest) -> list[DeliveryFile]:
    return [DeliveryFile(declared, folder / declared.path) for declared in manifest.files]


def _line_blocks(name: str, fh: BinaryIO, digest: Any) -> Iterator[list[str]]:
    """A file's lines in blocks of whole lines (text files are read ``BLOCK_BYTES`` at a time and
    split after a newline, where no UTF-8 sequence can be cut), feeding ``digest`` as it reads."""
    if name.endswith(".parquet"):
        data = fh.read()
        digest.update(data)
        yield parquet_lines(data)
        return
    rest = b""
    while block := fh.read(BLOCK_BYTES):
        digest.update(block)
        block = rest + block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        if cut:
            yield block[:cut].decode("utf-8", errors="replace").split("\n")[:-1]
    if rest:
        yield [rest.decode("utf-8", errors="replace")]


def parquet_lines(data: bytes) -> list[str]:
    """Parquet rows as event lines (row n is line n); nulls are absent fields, except a null
    ``after`` (a delete). An unreadable file is one line that validation rejects."""
    try:
        rows = pl.read_parquet(io.BytesIO(data)).to_dicts()
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return ["<unreadable parquet file>"]
    return [
        canonical_json({k: _drop_nulls(v) for k, v in row.items() if v is not None or k == "after"})
        for row in rows
    ]


def _drop_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value


def write_delivery(
    landing: Path,
    source: str,
    load_date: str,
    batch_id: str,
    lines: Sequence[str],
    ready_at: str,
    seq_range: tuple[int, int] | None = None,
    supersedes: Sequence[str] = (),
    parquet: bytes | None = None,
) -> Path:
    """Write one delivery (data file, then manifest) atomically; returns the manifest path.
    ``parquet`` (file content) replaces ``lines`` for a Parquet delivery."""
    folder = landing / source / load_date
    folder.mkdir(parents=True, exist_ok=True)
    if parquet is not None:
        data, data_name, events = parquet, f"{batch_id}.parquet", len(parquet_lines(parquet))
    else:
        data = "".join(f"{line}\n" for line in lines).encode("utf-8")
        data_name, events = f"{batch_id}.jsonl", sum(1 for line in lines if line.strip())
    files = []
    if data:
        atomic_write(folder / data_name, data)
        files.append(
            {
                "path": data_name,
                "sha256": hashlib.sha256(data).hexdigest(),
                "events": events,
                "bytes": len(data),
            }
        )
    manifest: dict[str, object] = {
        "source": source,
        "batch_id": batch_id,
        "load_date": load_date,
        "ready_at": ready_at,
        "schema_version": 1,
        "files": files,
    }
    if seq_range is not None:
        manifest["source_seq_low"], manifest["source_seq_high"] = seq_range
    if supersedes:
        manifest["supersedes"] = list(supersedes)
    path = folder / f"{batch_id}{MANIFEST_SUFFIX}"
    atomic_write(path, canonical_json(manifest).encode("utf-8"))
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file, fsync, rename, fsync the folder: a reader sees the old file or the new one."""
    tmp = temp_path(path)
    with open(tmp, "wb") as fh:
        fh.write(data)
    atomic_replace(tmp, path)


def temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def atomic_replace(tmp: Path, path: Path) -> None:
    """Make a fully written ``tmp`` durable, then rename it over ``path`` and fsync the folder."""
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
