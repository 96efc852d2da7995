"""The landing area as a sensor sees it between two reads: every manifest's place and file facts,
from the folder listing and one ``lstat`` each, nothing opened or parsed (``area.py`` reads)."""

from __future__ import annotations

import os
from pathlib import Path

from replay_assets.core.settled import Listed
from replay_assets.storage.landing.area import manifest_paths


def list_manifests(landing: Path) -> list[tuple[Path, str | None, Listed]]:
    """Each entry of ``manifest_paths`` with what a cheap look tells about it: its source and load
    date as its folders name them, and a fingerprint (inode, size, modification and change
    times) that changes whenever the file is replaced, rewritten or touched."""
    listed = []
    for path, problem in manifest_paths(landing):
        parts = path.relative_to(landing).parts
        day = parts[1] if len(parts) > 1 else ""
        listed.append((path, problem, Listed("/".join(parts), parts[0], day, _fingerprint(path, problem))))
    return listed


def _fingerprint(path: Path, problem: str | None) -> str:
    if problem is not None:
        return f"problem:{problem}"
    try:
        found = os.lstat(path)
    except OSError as error:
        return f"unreadable:{error.errno}"
    return f"{found.st_ino}:{found.st_size}:{found.st_mtime_ns}:{found.st_ctime_ns}"
