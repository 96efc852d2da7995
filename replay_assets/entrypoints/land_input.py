"""What `land` reads: the input file, and its lines in the native contract through the chosen
adapter (a line adapter over JSONL, or one batch of a seed-000 document)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from replay_assets.core import debezium
from replay_assets.core.adapters import Adapter, adapt_lines, seed000_batch
from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import Rejection, canonical_json, jsonl_lines, parse_event, sha256_text
from replay_assets.storage.db.clock import real_now
from replay_assets.usecases.land import contract_context


def delivery_input(
    args: argparse.Namespace, settings: Settings
) -> tuple[str, list[str], list[str], bytes | None]:
    """What ``land`` delivers: the batch id (given, or derived from the source, the load date and
    the content), the native lines, the source records and, for a Parquet file, its bytes."""
    data = read_input(Path(args.file))
    origin = canonical_json([args.source, args.load_date])
    if args.file.endswith(".parquet"):
        return args.batch_id or f"B{sha256_text(origin + data.hex())[:24]}", [], [], data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file} is not UTF-8 text (byte {bad.start})") from None
    lines, records = adapted(args, text, settings)
    return args.batch_id or f"B{sha256_text(origin + chr(10).join(lines))[:24]}", lines, records, None


def adapted(args: argparse.Namespace, text: str, settings: Settings) -> tuple[list[str], list[str]]:
    """The delivery's native lines and, for an adapter that keeps them, its source records:
    JSONL through a line adapter, a Debezium file through the source's declared mapping (the
    default maps tables order_line(s) and customer(s) by their own column names), or one batch
    of a seed-000 document (``--batch-id`` names it; its records are numbered over the
    document's order)."""
    adapter = Adapter(args.adapter)
    if adapter is Adapter.DEBEZIUM:
        mapping = settings.debezium.get(args.source, debezium.DEFAULT_MAPPING)
        return debezium.adapt_file(jsonl_lines(text), mapping)
    if adapter is not Adapter.SEED000:
        return adapt_lines(adapter, jsonl_lines(text)), []
    if not args.batch_id:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: --adapter seed000 needs --batch-id (a batch of it)")
    try:
        document = json.loads(text)
    except ValueError as bad:
        raise ReplayError(
            ErrorCode.USAGE, f"{args.file}: not a seed-000 document (not one JSON value: {bad})"
        ) from None
    try:
        return seed000_batch(document, args.batch_id), []
    except ValueError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: {bad}") from None


def read_input(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise ReplayError(ErrorCode.USAGE, f"{path} is not a regular file")
        return path.read_bytes()
    except OSError as error:
        raise ReplayError(ErrorCode.USAGE, f"{path} cannot be read ({error.strerror})") from None


def unmapped_report(records: list[str]) -> list[str]:
    """What the adapter could not map (landed as delivered, for validation to reject) and the
    Kafka tombstones it skipped, in a line or two; the source records keep every detail."""
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


def rejection_report(lines: list[str], settings: Settings, source: str) -> list[str]:
    """How many of the delivery's events the contract's per-event rules will reject when its
    load date is applied, by reason with the first line of each: a mapping problem shows at
    ``land``, before ``run``. What only the warehouse can judge (duplicates, conflicts) is not
    counted here."""
    ctx = contract_context(settings, settings.fixed_now or real_now(), source)
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
