"""Delivery manifests: parsing, cheap readiness, full verification. Pure."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from replay_assets.core import names, strict_json
from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.names import FILE_NAME, BadName, NameKind, check_name, is_name

SHA256 = re.compile(r"[0-9a-f]{64}")
MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_FIELDS = frozenset(
    {
        "source",
        "batch_id",
        "load_date",
        "ready_at",
        "schema_version",
        "source_seq_low",
        "source_seq_high",
        "files",
        "supersedes",
        "source_records",
    }
)
REQUIRED_FIELDS = ("source", "batch_id", "load_date", "ready_at", "schema_version", "files")


@dataclass(frozen=True)
class Limits:
    """Input limits: a delivery over any of them is not ready. Defaults admit 10M events a day."""

    manifest_bytes: int = 1 << 20
    file_bytes: int = 16 << 30
    events_per_file: int = 50_000_000
    files_per_manifest: int = 1000
    line_bytes: int = 1 << 20


@dataclass(frozen=True)
class ManifestFile:
    path: str
    sha256: str
    events: int
    bytes: int | None


@dataclass(frozen=True)
class Manifest:
    source: str
    batch_id: str
    load_date: str
    ready_at: dt.datetime
    schema_version: int
    seq_low: int | None
    seq_high: int | None
    files: tuple[ManifestFile, ...]
    supersedes: tuple[str, ...]
    sha256: str  # of the canonical manifest content: the delivery's identity
    # the records an adapter read, as delivered, with what it made of each (``land --adapter
    # debezium``): evidence landed beside the events, never parsed as events
    source_records: ManifestFile | None = None

    @property
    def all_files(self) -> tuple[ManifestFile, ...]:
        return (*self.files, self.source_records) if self.source_records else self.files


class ManifestError(ValueError):
    """A manifest that cannot be read; the message names the rule (the caller names the file)."""


def _int(obj: Mapping[str, Any], name: str, optional: bool = False) -> int | None:
    value = obj.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10**12:
        raise ManifestError(f"field {name!r} is not an integer in 0..1e12")
    return value


def _parse_file(entry: Any) -> ManifestFile:
    if not isinstance(entry, dict) or set(entry) - {"path", "sha256", "events", "bytes"}:
        raise ManifestError("a 'files' entry is not {path, sha256, events[, bytes]}")
    path, digest = entry.get("path"), entry.get("sha256")
    if not isinstance(path, str) or not FILE_NAME.fullmatch(path) or path.endswith(MANIFEST_SUFFIX):
        raise ManifestError("a file path is not a plain file name in the delivery folder")
    if not isinstance(digest, str) or not SHA256.fullmatch(digest):
        raise ManifestError(f"file {path!r} has no lowercase hex sha256")
    events = _int(entry, "events")
    assert events is not None
    return ManifestFile(path, digest, events, _int(entry, "bytes", optional=True))


def parse_manifest(text: str, limits: Limits) -> Manifest:
    """Parse and validate a manifest. Raises :class:`ManifestError` naming the broken rule."""
    if len(text.encode("utf-8")) > limits.manifest_bytes:
        raise ManifestError(f"manifest exceeds {limits.manifest_bytes} bytes")
    try:
        obj = strict_json.loads(text)
    except strict_json.DuplicateKey as duplicate:
        raise ManifestError(f"manifest is not valid: {duplicate}") from None
    except (ValueError, RecursionError):
        raise ManifestError("manifest is not valid JSON") from None
    if not isinstance(obj, dict):
        raise ManifestError("manifest is not a JSON object")
    missing = [name for name in REQUIRED_FIELDS if name not in obj]
    if missing:
        raise ManifestError(f"manifest lacks field {missing[0]!r}")
    unknown = sorted(set(obj) - MANIFEST_FIELDS)
    if unknown:
        raise ManifestError(f"manifest has unknown field {unknown[0]!r}")
    for name, kind in (("source", NameKind.SOURCE), ("batch_id", NameKind.BATCH_ID)):
        try:
            check_name(kind, obj[name])
        except BadName as bad:
            raise ManifestError(f"field {name!r} is not valid: {bad}") from None
    return _build(obj, limits)


def _build(obj: dict[str, Any], limits: Limits) -> Manifest:
    load_date = parse_day(obj["load_date"], "load_date")
    ready_at = parse_instant(obj["ready_at"], "ready_at")
    files = obj["files"]
    if not isinstance(files, list) or len(files) > limits.files_per_manifest:
        raise ManifestError(f"'files' is not a list of at most {limits.files_per_manifest}")
    parsed = tuple(_parse_file(entry) for entry in files)
    if len({f.path for f in parsed}) != len(parsed):
        raise ManifestError("'files' names a file twice")
    supersedes = obj.get("supersedes", [])
    if not isinstance(supersedes, list) or not all(is_name(NameKind.BATCH_ID, b) for b in supersedes):
        raise ManifestError("'supersedes' is not a list of batch ids")
    low, high = _int(obj, "source_seq_low", True), _int(obj, "source_seq_high", True)
    if low is not None and high is not None and low > high:
        raise ManifestError("source_seq_low is above source_seq_high")
    schema_version = _int(obj, "schema_version")
    assert schema_version is not None
    records = _parse_file(obj["source_records"]) if "source_records" in obj else None
    if records is not None and records.path in {f.path for f in parsed}:
        raise ManifestError("'source_records' names a file of 'files'")
    return Manifest(
        obj["source"],
        obj["batch_id"],
        load_date=load_date.isoformat(),
        ready_at=ready_at,
        schema_version=schema_version,
        seq_low=low,
        seq_high=high,
        files=parsed,
        supersedes=tuple(supersedes),
        sha256=sha256_text(canonical_json(obj)),
        source_records=records,
    )


def parse_day(value: Any, name: str) -> dt.date:
    try:
        return names.parse_day(value)
    except BadName:
        raise ManifestError(f"field {name!r} is not a calendar date YYYY-MM-DD") from None


def parse_instant(value: Any, name: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ManifestError(f"field {name!r} is not an ISO-8601 instant with a zone")
    return moment.astimezone(dt.UTC)


@dataclass(frozen=True)
class FileFacts:
    """What a cheap look at one delivered file tells: present, and its size."""

    present: bool
    size: int
    modified_ns: int = 0
    irregular: str | None = None  # why the name is not a regular file (symlink, FIFO, directory)


def cheap_readiness(
    manifest: Manifest, files: Mapping[str, FileFacts], now: dt.datetime, limits: Limits
) -> str | None:
    """None when the delivery looks ready (sensor-grade check); else the reason, naming the file."""
    if manifest.ready_at > now:
        return f"ready_at {manifest.ready_at.isoformat()} is in the future"
    for f in manifest.all_files:
        facts = files.get(f.path)
        if facts is None or not facts.present:
            return f"file {f.path} is missing"
        if facts.irregular is not None:
            return f"file {f.path} is not a regular file in the delivery folder ({facts.irregular})"
        if f.bytes is not None and facts.size != f.bytes:
            return f"file {f.path} has {facts.size} bytes, manifest says {f.bytes}"
        if facts.size > limits.file_bytes:
            return f"file {f.path} exceeds {limits.file_bytes} bytes"
        if f.events > limits.events_per_file:
            return f"file {f.path} declares more than {limits.events_per_file} events"
    return None


def verify_file(declared: ManifestFile, sha256: str, events: int) -> str | None:
    """Full verification of a read file: None when it matches, else the reason naming it."""
    if sha256 != declared.sha256:
        return f"file {declared.path} sha256 does not match the manifest"
    if events != declared.events:
        return f"file {declared.path} has {events} events, manifest says {declared.events}"
    return None
