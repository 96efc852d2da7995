"""What `land` reads: the input file, and its lines in the native contract through the chosen
adapter (a line adapter over JSONL, or one batch of a seed-000 document)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from replay_assets.core.adapters import Adapter, adapt_lines, seed000_batch
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.events import jsonl_lines


def adapted(args: argparse.Namespace, text: str) -> list[str]:
    """The delivery's native lines: JSONL through a line adapter, or one batch of a seed-000
    document (``--batch-id`` names it; its records are numbered over the document's order)."""
    adapter = Adapter(args.adapter)
    if adapter is not Adapter.SEED000:
        return adapt_lines(adapter, jsonl_lines(text))
    if not args.batch_id:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: --adapter seed000 needs --batch-id (a batch of it)")
    try:
        document = json.loads(text)
    except ValueError as bad:
        raise ReplayError(
            ErrorCode.USAGE, f"{args.file}: not a seed-000 document (not one JSON value: {bad})"
        ) from None
    try:
        return seed000_batch(document, args.batch_id)
    except ValueError as bad:
        raise ReplayError(ErrorCode.USAGE, f"{args.file}: {bad}") from None


def read_input(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise ReplayError(ErrorCode.USAGE, f"{path} is not a regular file")
        return path.read_bytes()
    except OSError as error:
        raise ReplayError(ErrorCode.USAGE, f"{path} cannot be read ({error.strerror})") from None
