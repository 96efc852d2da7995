"""What landing a batch writes, as rows, whatever the engine: the staged event of a line
``parse_event`` decided, rejections and schema-gate violations with where they were found, the
manifest's and its files' rows, and the upcasts. The DuckDB adapter (``ingest.py``) and the Spark
adapter (``storage/spark/landing.py``) write these same rows, so the two cannot disagree on what
a line became."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay_assets.core.errors import ErrorCode, ReplayError, Violation
from replay_assets.core.events import (
    CUSTOMER_IMAGE,
    KEY_FIELDS,
    ORDER_IMAGE,
    SCHEMA_VERSION,
    BatchViolation,
    Event,
    Rejection,
    ValidationContext,
    canonical_json,
    parse_event,
)
from replay_assets.core.manifest import Manifest
from replay_assets.storage.home.files import LineProblem
from replay_assets.storage.landing.area import DeliveryFile

STAGED_IMAGE = (*ORDER_IMAGE, *(c for c in CUSTOMER_IMAGE if c not in ORDER_IMAGE))


@dataclass(frozen=True)
class Landed:
    batch_id: str
    source_events: int
    rejected: int
    violations: int
    bytes_read: int
    new: bool
    worker_cpu_seconds: float = 0.0  # landing workers' CPU time (the landing process's is measured apart)


@dataclass
class Found:
    """What a batch's lines produced besides staged events: rejections, schema-gate violations,
    the events each file had upcast, by delivered ``schema_version``, and the CPU time its lines
    took in the landing workers."""

    rejected: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    upcast: Counter[tuple[str, int]] = field(default_factory=Counter)
    worker_cpu_seconds: float = 0.0

    def landed(self, manifest: Manifest, events: int, files: Sequence[DeliveryFile]) -> Landed:
        """What landing the batch did, once its rows are written."""
        return Landed(
            manifest.batch_id,
            events,
            rejected=len(self.rejected),
            violations=len(self.violations),
            bytes_read=sum(f.size for f in files),
            new=True,
            worker_cpu_seconds=self.worker_cpu_seconds,
        )


def landed_again(manifest: Manifest, landed_sha256: str) -> Landed:
    """A batch id landed before may come again only with the same manifest, which lands nothing
    (idempotent); another content under it fails closed (REPLAY_BATCH_ID_REUSED)."""
    if landed_sha256 != manifest.sha256:
        raise ReplayError(
            ErrorCode.BATCH_ID_REUSED, f"batch {manifest.batch_id} was landed before with other content"
        )
    return Landed(manifest.batch_id, 0, rejected=0, violations=0, bytes_read=0, new=False)


def schema_gate(manifest: Manifest, ctx: ValidationContext) -> list[dict[str, Any]]:
    """The batch's schema-gate violation when its manifest declares a version nothing reads."""
    if manifest.schema_version == 1 or manifest.schema_version in ctx.upcasters:
        return []
    return [
        {
            "batch_id": manifest.batch_id,
            "source": manifest.source,
            "load_date": manifest.load_date,
            "source_file": None,
            "line_number": None,
            "event_id": None,
            "rule": Violation.UNSUPPORTED_SCHEMA_VERSION.value,
            "detail": "manifest schema_version is not 1 and no upcaster is declared for it",
        }
    ]


def decide_rest(
    where: dict[str, Any],
    lines: Iterable[tuple[int, str]],
    problems: dict[int, LineProblem],
    ctx: ValidationContext,
    found: Found,
) -> list[dict[str, Any]]:
    """The oracle's decision on each line no faster path certified: its staged event (returned),
    or its rejection or violation (kept in ``found``) with its line number."""
    staged = []
    for number, line in lines:
        where_row = {**where, "line_number": number}
        problem = problems.get(number)
        outcome = Rejection(problem.reason, problem.detail) if problem else parse_event(line, ctx)
        if isinstance(outcome, Event):
            staged.append(staged_row(where_row, outcome))
            if outcome.schema_version != SCHEMA_VERSION:
                found.upcast[where["source_file"], outcome.schema_version] += 1
        elif isinstance(outcome, Rejection):
            found.rejected.append(
                {
                    **where_row,
                    "event_id": outcome.event_id,
                    "reason_code": outcome.reason.value,
                    "detail": outcome.detail,
                }
            )
        else:
            found.violations.append(violation_row(where_row, outcome))
    return staged


def violation_row(where: dict[str, Any], v: BatchViolation) -> dict[str, Any]:
    return {
        **where,
        "event_id": v.event_id,
        "rule": v.rule.value,
        "detail": f"{v.detail} ({where['source_file']} line {where['line_number']})",
    }


def staged_row(where: dict[str, Any], e: Event) -> dict[str, Any]:
    row = {
        **where,
        "event_id": e.event_id,
        "source_seq": e.source_seq,
        "entity": e.entity.value,
        "op": e.op.value,
        "key": e.key,
        "version": e.version,
        "event_time": e.event_time,
        "content_sha256": e.content_sha256,
        "image_sha256": e.image_sha256,
    }
    row.update(dict.fromkeys(STAGED_IMAGE))
    key_values = json.loads(e.key)
    row.update(zip(KEY_FIELDS[e.entity], key_values, strict=True))
    if e.image is not None:
        row.update(e.image)
    return row


def manifest_row(
    manifest: Manifest, files: Sequence[DeliveryFile], events: int, now: dt.datetime
) -> dict[str, Any]:
    return {
        "batch_id": manifest.batch_id,
        "source": manifest.source,
        "load_date": manifest.load_date,
        "manifest_sha256": manifest.sha256,
        "ready_at": manifest.ready_at.isoformat(),
        "seq_low": manifest.seq_low,
        "seq_high": manifest.seq_high,
        "source_events": events,
        "bytes_read": sum(f.size for f in files),
        "landed_at": now,
    }


def landed_file_rows(manifest: Manifest, files: Sequence[DeliveryFile]) -> list[dict[str, Any]]:
    """Each declared file as verified at landing: what a pruned load date still proves."""
    sizes = {f.name: f.size for f in files}
    return [
        {
            "batch_id": manifest.batch_id,
            "load_date": manifest.load_date,
            "source_file": declared.path,
            "sha256": declared.sha256,
            "events": declared.events,
            "bytes": sizes.get(declared.path),
        }
        for declared in manifest.files
    ]


def upcast_rows(
    manifest: Manifest, upcast: Counter[tuple[str, int]], ctx: ValidationContext
) -> list[dict[str, Any]]:
    found = []
    for (source_file, version), count in sorted(upcast.items()):
        upcaster = ctx.upcasters[version]
        found.append(
            {
                "batch_id": manifest.batch_id,
                "load_date": manifest.load_date,
                "source_file": source_file,
                "schema_version": version,
                "upcaster_sha256": upcaster.sha256,
                "events": count,
                "upcaster": canonical_json(upcaster.declaration()),
            }
        )
    return found
