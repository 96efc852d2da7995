"""Writing deliveries into the landing area (``land``, tests and seed scenarios), crash-safe:
data first, manifest last, each via temp file, fsync and rename (or, for ``land``, a hard link
that never replaces a name). Also the atomic-write helpers the published copy uses."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import canonical_json
from replay_assets.core.manifest import MANIFEST_SUFFIX
from replay_assets.core.names import NameKind, check_name
from replay_assets.storage.home.files import atomic_write, fsync_folder, read_bounded, temp_path
from replay_assets.storage.landing.area import manifest_paths, parquet_lines


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
    """Write one delivery (data file, then manifest) atomically, replacing what was there (a
    source re-delivering; tests and seed scenarios); returns the manifest path. ``parquet``
    (file content) replaces ``lines`` for a Parquet delivery."""
    content = _delivery(
        source,
        load_date,
        batch_id=batch_id,
        lines=lines,
        ready_at=ready_at,
        seq_range=seq_range,
        supersedes=supersedes,
        parquet=parquet,
    )
    folder = landing / source / load_date
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in content:
        atomic_write(folder / name, data)
    return folder / content[-1][0]


def create_delivery(
    landing: Path,
    source: str,
    load_date: str,
    batch_id: str,
    lines: Sequence[str],
    ready_at: str,
    parquet: bytes | None = None,
    source_records: Sequence[str] = (),
) -> tuple[Path, bool]:
    """``replay-assets land``: names validated before anything is touched; never replaces a
    file. A batch id is unique across sources and load dates: one already used elsewhere, or
    here with other content, fails closed with REPLAY_BATCH_ID_REUSED. The identical delivery
    again is a no-op. Returns the manifest path and whether anything was written."""
    for kind, value in (
        (NameKind.SOURCE, source),
        (NameKind.BATCH_ID, batch_id),
        (NameKind.LOAD_DATE, load_date),
    ):
        check_name(kind, value)
    content = _delivery(
        source,
        load_date,
        batch_id=batch_id,
        lines=lines,
        ready_at=ready_at,
        seq_range=None,
        supersedes=(),
        parquet=parquet,
        source_records=source_records,
    )
    folder = landing / source / load_date
    manifest = folder / content[-1][0]
    elsewhere = [p for p, _ in manifest_paths(landing) if p.name == manifest.name and p != manifest]
    if elsewhere:
        where = elsewhere[0].relative_to(landing).parent
        raise ReplayError(ErrorCode.BATCH_ID_REUSED, f"batch {batch_id} is already used by {where}")
    if all(_same_file(folder, name, data) for name, data in content):
        return manifest, False
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in content:
        if not atomic_create(folder / name, data):
            raise ReplayError(
                ErrorCode.BATCH_ID_REUSED,
                f"batch {batch_id} is already in {source}/{load_date} with other content",
            )
    return manifest, True


def _same_file(folder: Path, name: str, data: bytes) -> bool:
    try:
        return read_bounded(folder, name, len(data)) == data
    except (OSError, ValueError):
        return False


def _delivery(
    source: str,
    load_date: str,
    batch_id: str,
    lines: Sequence[str],
    ready_at: str,
    seq_range: tuple[int, int] | None,
    supersedes: Sequence[str],
    parquet: bytes | None,
    source_records: Sequence[str] = (),
) -> list[tuple[str, bytes]]:
    """The files of one delivery, as (name, content), the manifest last."""
    if parquet is not None:
        data, data_name, events = parquet, f"{batch_id}.parquet", len(parquet_lines(parquet))
    else:
        data = "".join(f"{line}\n" for line in lines).encode("utf-8")
        data_name, events = f"{batch_id}.jsonl", sum(1 for line in lines if line.strip())
    files = []
    content = []
    if data:
        content.append((data_name, data))
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
    if source_records:
        records = "".join(f"{line}\n" for line in source_records).encode("utf-8")
        name = f"{batch_id}.source.jsonl"
        content.append((name, records))
        manifest["source_records"] = {
            "path": name,
            "sha256": hashlib.sha256(records).hexdigest(),
            "events": len(source_records),
            "bytes": len(records),
        }
    content.append((f"{batch_id}{MANIFEST_SUFFIX}", canonical_json(manifest).encode("utf-8")))
    return content


def atomic_create(path: Path, data: bytes) -> bool:
    """Like :func:`atomic_write`, but never replaces: False when ``path`` exists with other
    content (a hard link of the finished temp file either creates the name or fails)."""
    tmp = temp_path(path)
    with open(tmp, "wb") as fh:
        fh.write(data)
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
    except FileExistsError:
        return _same_file(path.parent, path.name, data)
    finally:
        tmp.unlink()
    fsync_folder(path.parent)
    return True
