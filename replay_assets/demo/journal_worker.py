"""A worker process of the seed-004 demo: applies one load date of a home, optionally killing
itself (SIGKILL) at a journal point, and prints the outcome as JSON. A worker that loses a
journal step to another worker of the same operation is refused (REPLAY_RECOVERY_CONFLICT, or
REPLAY_WAREHOUSE_BUSY) and, as a retried step would, applies again once: it then finds the one
result the winner recorded.

``python -m replay_assets.demo.journal_worker HOME NOW LOAD_DATE [FAIL_POINT]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from replay_assets.core.config import Settings
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.manifest import parse_instant
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline


def main(argv: list[str]) -> None:
    home, now, day, *point = argv
    settings = Settings(
        home=Path(home), fixed_now=parse_instant(now, "now"), fail_point=point[0] if point else None
    )
    try:
        result = apply(Pipeline(settings), day, None)
    except ReplayError as refused:
        if refused.code not in (ErrorCode.RECOVERY_CONFLICT, ErrorCode.WAREHOUSE_BUSY):
            raise
        result = apply(Pipeline(settings), day, None)
    print(json.dumps({"status": result.status.value}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
