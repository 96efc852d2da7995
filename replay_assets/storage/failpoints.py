"""Named fail points for crash tests: the process kills itself with SIGKILL there (no cleanup,
no exception handlers, exactly like a power cut for everything not yet committed)."""

from __future__ import annotations

import os
import signal


def hit(configured: str | None, name: str) -> None:
    if configured == name:
        os.kill(os.getpid(), signal.SIGKILL)
