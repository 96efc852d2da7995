"""What `land` reads: the input file, and its lines in the native contract through the chosen
adapter (a line adapter over JSONL, a Debezium file read line by line within the line limit, or
one batch of a seed-000 document)."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from replay_assets.core import debezium, strict_json
from replay_assets.core.adapters import Adapter, adapt_lines, adapter_for, seed000_batch
from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, RejectReason, ReplayError
from replay_assets.core.events import Rejection, canonical_json, jsonl_lines, parse_event, sha256_text
from replay_assets.storage.home.files import text_lines
from replay_assets.usecases.land import contract_context


def delivery_input(
    args: argparse.Namespace, settings: Settings
) -> tuple[str, list[str], list[str], bytes | None]:
    """What ``land`` delivers: the batch id (given, or :func:`default_batch_id`), the native
    lines, the source records and, for a Parquet file, its bytes."""
    path = Path(args.file)
    if args.adapter and Adapter(args.adapter) is Adapter.DEBEZIUM:
        named_adapter(args, edges(path))  # a Parquet file is refused before it is read as lines
        file_sha256, lines, records = debezium_input(args, settings)
        return default_batch_id(args, file_sha256, [*lines, *records]), lines, records, None
    data = read_input(path)
    adapter = named_adapter(args, data)
    file_sha256 = hashlib.sha256(data).hexdigest()
    if adapter is Adapter.PARQUET:
        return default_batch_id(args, file_sha256, []), [], [], data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file} is not UTF-8 text (byte {bad.start})") from None
    lines, records = adapted(args, adapter, text, settings)
    return default_batch_id(args, file_sha256, lines), lines, records, None


def default_batch_id(args: argparse.Namespace, file_sha256: str, landed: Sequence[str]) -> str:
    """``--batch-id``, or one derived from the source, the load date, the file's own bytes and
    what it lands: two files are two deliveries even when they map to the same events (or to
    none, as files of Kafka tombstones do), and one file mapped anew is another delivery."""
    if args.batch_id:
        return str(args.batch_id)
    content = [args.source, args.load_date, file_sha256, sha256_text("\n".join(landed))]
    return f"B{sha256_text(canonical_json(content))[:24]}"


def debezium_input(args: argparse.Namespace, settings: Settings) -> tuple[str, list[str], list[str]]:
    """A Debezium file's sha256, native lines and source records, through the source's declared
    mapping (the default maps ``public``'s tables order_line(s) and customer(s) by their own
    column names). It is read as deliveries are (``text_lines``): a line past
    ``limits.line_bytes`` is only hashed while it streams past, and its record keeps the first
    bytes with the reason. A position the contract cannot number refuses the file (exit 2)."""
    digest = hashlib.sha256()
    lines: list[str] = []
    cut: dict[int, str] = {}
    with open_input(Path(args.file)) as fh:
        for block, problems in text_lines(fh, digest, settings.limits.line_bytes):
            for index, problem in sorted(problems.items()):
                if problem.reason is RejectReason.INVALID_UTF8:
                    line = len(lines) + index + 1
                    raise ReplayError(ErrorCode.USAGE, f"{args.file} is not UTF-8 text (line {line})")
                cut[len(lines) + index + 1] = problem.detail
            lines += block
    mapping = settings.debezium.get(args.source, debezium.DEFAULT_MAPPING)
    try:
        native, records = debezium.adapt_file(lines, mapping, cut)
    except debezium.PositionOutOfRange as refused:
        raise ReplayError(
            ErrorCode.USAGE,
            f"{args.file}: {refused}; the contract numbers source_seq and version 0..1e12 after "
            f"debezium.{args.source}.position_offset is subtracted (a position the contract cannot "
            "hold refuses the file; nothing was landed)",
        ) from None
    return digest.hexdigest(), native, records


def adapted(
    args: argparse.Namespace, adapter: Adapter, text: str, settings: Settings
) -> tuple[list[str], list[str]]:
    """The delivery's native lines: JSONL through a line adapter, or one batch of a seed-000
    document (``--batch-id`` names it; its records are numbered over the document's order).
    Debezium files are read apart (:func:`debezium_input`)."""
    if adapter is not Adapter.SEED000:
        return adapt_lines(adapter, jsonl_lines(text)), []
    if not args.batch_id:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: --adapter seed000 needs --batch-id (a batch of it)")
    try:
        document = strict_json.loads(text)
    except strict_json.DuplicateKey as bad:
        rule = "a duplicated key is refused, never last-wins"
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: not a seed-000 document ({bad}; {rule})") from None
    except ValueError as bad:
        raise ReplayError(
            ErrorCode.USAGE, f"{args.file}: not a seed-000 document (not one JSON value: {bad})"
        ) from None
    try:
        return seed000_batch(document, args.batch_id), []
    except ValueError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: {bad}") from None


def named_adapter(args: argparse.Namespace, data: bytes) -> Adapter:
    """The adapter ``land`` reads the file with (:func:`adapter_for`); a usage error when the
    content is not what it reads."""
    try:
        return adapter_for(args.adapter, args.file, data)
    except ValueError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file} {bad}") from None


def edges(path: Path) -> bytes:
    """The file's first and last four bytes (the whole file when shorter than eight): all
    :func:`adapter_for` looks at, without reading a large file whole."""
    with open_input(path) as fh:
        head = fh.read(8)
        if len(head) < 8:
            return head
        fh.seek(-4, 2)
        return head[:4] + fh.read(4)


def read_input(path: Path) -> bytes:
    with open_input(path) as fh:
        try:
            return fh.read()
        except OSError as error:
            raise ReplayError(ErrorCode.USAGE, f"{path} cannot be read ({error.strerror})") from None


def open_input(path: Path) -> BinaryIO:
    try:
        if not path.is_file():
            raise ReplayError(ErrorCode.USAGE, f"{path} is not a regular file")
        return path.open("rb")
    except OSError as error:
        raise ReplayError(ErrorCode.USAGE, f"{path} cannot be read ({error.strerror})") from None


def unmapped_report(records: list[str]) -> list[str]:
    """What the adapter could not map (a marker line validation rejects; the record as delivered
    stays in the source records) and the Kafka tombstones it skipped, in a line or two."""
    found = [json.loads(r) for r in records]
    failed = [r for r in found if r["reason"]]
    tombstones = sum(1 for r in found if r["line"] is None)
    out = []
    if failed:
        first = failed[0]
        out.append(
            f"{len(failed)} of {len(found)} records could not be mapped and will be rejected "
            f"(first: record {first['record']}: {first['reason']})"
        )
    if tombstones:
        out.append(f"{tombstones} Kafka tombstones (null values after deletes) carry no change: no event")
    return out


def rejection_report(lines: list[str], settings: Settings, source: str, now: dt.datetime) -> list[str]:
    """How many of the delivery's events the contract's per-event rules will reject when its
    load date is applied (``now``: the home's clock), by reason with the first line of each: a
    mapping problem shows at ``land``, before ``run``. What only the warehouse can judge
    (duplicates, conflicts) is not counted here."""
    ctx = contract_context(settings, now, source)
    first: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for number, line in enumerate(lines, 1):
        outcome = parse_event(line, ctx)
        if isinstance(outcome, Rejection):
            counts[outcome.reason] += 1
            first.setdefault(outcome.reason, f"line {number}: {outcome.detail}")
    if not counts:
        return []
    out = [f"{counts.total()} of {len(lines)} events will be rejected when the load date is applied:"]
    return out + [f"  {reason}: {n} (first: {first[reason]})" for reason, n in sorted(counts.items())]
