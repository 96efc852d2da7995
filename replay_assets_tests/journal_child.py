"""A process that runs the journal contract's operation and is killed at a fail point
(``test_journal_kills.py``): ``journal_child.py KIND ROOT REMOTE FAIL_POINT``. A file, not
``python -c``: pyspark's Spark Connect check exits a process whose main module has no file."""

from __future__ import annotations

import sys
from pathlib import Path

from replay_assets_tests.journal_operation import execute
from replay_assets_tests.stores import make_store

if __name__ == "__main__":
    kind, root, remote, fail_point = sys.argv[1:5]
    store, close = make_store(kind, Path(root), remote)
    try:
        execute(store, fail_point=fail_point)
    finally:
        close()
