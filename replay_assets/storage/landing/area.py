"""The landing area on disk: ``$HOME/landing/<source>/<load_date>/<batch_id>.manifest.json``.

Reading is cheap (sensor-grade: stat only) or verified (sha256 and event counts). Writing
deliveries is ``deliveries.py``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import polars as pl

from replay_assets.core.events import canonical_json, sha256_text
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
from replay_assets.core.names import NameKind, is_name
from replay_assets.core.plan import Delivery
from replay_assets.storage.home.files import (
    LineProblem,
    NotRegularFile,
    open_regular,
    read_bounded,
    regular_stat,
    text_lines,
)

CHUNK_LINES = 250_000  # lines landed per statement: bounds memory whatever the file's size
RawChunk = tuple[int, list[str], dict[int, LineProblem]]  # first line number, lines, problems by number


@dataclass(frozen=True)
class Seen:
    """One manifest file found in the landing area: parsed, or the reason it cannot be."""

    path: Path
    manifest: Manifest | None
    error: str | None


def scan(landing: Path, limits: Limits) -> list[Seen]:
    """Every manifest under ``landing/<source>/<load_date>/``, sorted by path; unreadable ones
    carry their reason. Folders and manifests are taken only as plain folders and regular files
    whose names are valid for their kind: a symlink, FIFO or odd name is reported, never
    followed or opened."""
    return scan_paths(manifest_paths(landing), limits)


def scan_paths(paths: list[tuple[Path, str | None]], limits: Limits) -> list[Seen]:
    """``scan`` of the given entries of ``manifest_paths`` only (a sensor reads the new or
    changed manifests, ``storage/landing/listing.py``)."""
    found = []
    for path, problem in paths:
        if problem is not None:
            found.append(Seen(path, None, problem))
            continue
        try:
            if not is_name(NameKind.SOURCE, path.parent.parent.name):
                raise ManifestError("the source folder's name is not a valid source")
            if not is_name(NameKind.LOAD_DATE, path.parent.name):
                raise ManifestError("the load-date folder's name is not a calendar date YYYY-MM-DD")
            data = read_bounded(path.parent, path.name, limits.manifest_bytes)
            manifest = parse_manifest(data.decode("utf-8"), limits)
            _check_place(path, manifest)
            found.append(Seen(path, manifest, None))
        except UnicodeDecodeError:
            found.append(Seen(path, None, "manifest is not valid UTF-8"))
        except (ManifestError, OSError, ValueError) as exc:
            found.append(Seen(path, None, str(exc)))
    return found


def manifest_paths(landing: Path) -> list[tuple[Path, str | None]]:
    """Paths of ``<source>/<load_date>/*.manifest.json`` without following symlinked folders;
    a symlinked folder comes with its reason instead."""
    linked = "a symlinked folder in the landing area (not followed)"
    paths: list[tuple[Path, str | None]] = []
    for source in _entries(landing):
        if source.is_symlink():
            paths.append((Path(source.path), linked))
        elif source.is_dir(follow_symlinks=False):
            for day in _entries(Path(source.path)):
                if day.is_symlink():
                    paths.append((Path(day.path), linked))
                elif day.is_dir(follow_symlinks=False):
                    entries = _entries(Path(day.path))
                    paths += [(Path(e.path), None) for e in entries if e.name.endswith(MANIFEST_SUFFIX)]
    return sorted(paths)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return [entry for entry in it if not entry.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _check_place(path: Path, manifest: Manifest) -> None:
    if path.name != f"{manifest.batch_id}{MANIFEST_SUFFIX}":
        raise ManifestError("manifest file name is not <batch_id>.manifest.json")
    if path.parent.name != manifest.load_date or path.parent.parent.name != manifest.source:
        raise ManifestError("manifest is not under <source>/<load_date>/ of its own fields")


def file_facts(folder: Path, manifest: Manifest) -> dict[str, FileFacts]:
    facts = {}
    for f in manifest.all_files:
        try:
            found = regular_stat(folder / f.path)
        except NotRegularFile as odd:
            facts[f.path] = FileFacts(True, 0, 0, irregular=str(odd))
            continue
        facts[f.path] = FileFacts(True, found.st_size, found.st_mtime_ns) if found else FileFacts(False, 0)
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
        load_date=m.load_date,
        manifest_sha256=m.sha256,
        ready_at=m.ready_at.isoformat(),
        not_ready=f"{reason} ({seen.path.name})" if reason else None,
        supersedes=m.supersedes,
        fingerprint=fingerprint,
    )


def unreadable_delivery(seen: Seen, landing: Path) -> Delivery | None:
    """An unreadable manifest inside ``<source>/<load_date>/`` (or a symlinked load-date folder)
    as a delivery that is not ready: its load date is BLOCKED_UPSTREAM naming it, so a date
    never applies without a delivery the landing area holds but cannot read. None when the
    folders say no source and load date."""
    assert seen.error is not None
    if seen.path.parent.parent.parent == landing:  # <source>/<load_date>/<manifest>
        folder = seen.path.parent
    elif seen.path.parent.parent == landing:  # <source>/<load_date> itself: a symlinked folder
        folder = seen.path
    else:
        return None
    source, day = folder.parent.name, folder.name
    if not (is_name(NameKind.SOURCE, source) and is_name(NameKind.LOAD_DATE, day)):
        return None
    label = seen.path.name.removesuffix(MANIFEST_SUFFIX) if folder != seen.path else day
    where = seen.path.relative_to(landing)
    return Delivery(
        source,
        label,
        load_date=day,
        manifest_sha256=sha256_text(canonical_json(["unreadable", str(where), seen.error])),
        ready_at="",
        not_ready=f"manifest {where} cannot be read: {seen.error}",
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
    uri: str | None = None  # where an engine's worker reads it instead (any scheme Arrow reads)

    @property
    def name(self) -> str:
        return self.declared.path

    @property
    def size(self) -> int:
        return self.path.lstat().st_size

    def chunks(
        self, size: int = CHUNK_LINES, line_bytes: int = Limits.line_bytes
    ) -> Generator[RawChunk, None, None]:
        """Every line, empty ones included (so numbers match the file), as ``(number of the
        first line, lines, problems)`` of at most ``size`` lines; problems maps a line number to
        why it was rejected while reading (over ``line_bytes``, not UTF-8). After the last chunk
        the file is verified against its manifest; a mismatch raises :class:`DeliveryMismatch`,
        so the caller must discard what it did with the chunks (the landing transaction rolls
        back). The file is opened only as a regular file inside its folder."""
        digest = hashlib.sha256()
        number, events = 1, 0
        pending: list[str] = []
        problems: dict[int, LineProblem] = {}
        try:
            with self._open() as fh:
                blocks = (
                    iter([(parquet_lines(_read_all(fh, digest)), {})])
                    if self.name.endswith(".parquet")
                    else text_lines(fh, digest, line_bytes)
                )
                for lines, found in blocks:
                    events += sum(
                        1 for i, line in enumerate(lines) if line[:1] == "{" or line.strip() or i in found
                    )
                    base = number + len(pending)
                    problems.update({base + i: p for i, p in found.items()})
                    pending += lines
                    while len(pending) >= size:
                        yield number, pending[:size], _take(problems, number + size)
                        number, pending = number + size, pending[size:]
                if pending:
                    yield number, pending, _take(problems, number + len(pending))
        except FileNotFoundError as missing:
            raise DeliveryMismatch(f"file {self.name} is missing") from missing
        except NotRegularFile as odd:
            raise DeliveryMismatch(f"file {self.name}: {odd}") from odd
        problem = verify_file(self.declared, digest.hexdigest(), events)
        if problem:
            raise DeliveryMismatch(problem)

    def _open(self) -> BinaryIO:
        """The file as a stream: a path as a regular file directly inside its folder; a URI
        through Arrow's file system for its scheme, when it names a file (which that system
        decides: a ``file://`` URI follows symlinks)."""
        if self.uri is None:
            return open_regular(self.path.parent, self.path.name)
        from pyarrow import fs as pafs  # only where an engine's worker reads a URI

        filesystem, path = pafs.FileSystem.from_uri(self.uri)
        kind = filesystem.get_file_info(path).type
        if kind == pafs.FileType.NotFound:
            raise FileNotFoundError(self.name)  # never the URI (it may hold a key)
        if kind != pafs.FileType.File:
            raise NotRegularFile(f"{self.name} at its URI is not a file")
        return cast(BinaryIO, filesystem.open_input_stream(path))


def _take(problems: dict[int, LineProblem], below: int) -> dict[int, LineProblem]:
    """Remove and return the problems of line numbers below ``below``."""
    taken = {n: p for n, p in problems.items() if n < below}
    for n in taken:
        del problems[n]
    return taken


def _read_all(fh: BinaryIO, digest: Any) -> bytes:
    data = fh.read()
    digest.update(data)
    return data


def delivery_files(folder: Path, manifest: Manifest) -> list[DeliveryFile]:
    return [DeliveryFile(declared, folder / declared.path) for declared in manifest.files]


def records_file(folder: Path, manifest: Manifest) -> DeliveryFile | None:
    """The delivery's source records file (evidence of what an adapter read), if it has one."""
    declared = manifest.source_records
    return DeliveryFile(declared, folder / declared.path) if declared else None


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
