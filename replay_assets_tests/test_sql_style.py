"""Every INSERT names its columns: a migration that adds or reorders a column cannot shift
values silently into the wrong one."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "replay_assets"
POSITIONAL = re.compile(r"INSERT\s+(OR\s+REPLACE\s+)?INTO\s+\w+\s+(VALUES|SELECT)\b", re.IGNORECASE)


def test_no_insert_without_a_column_list() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}: {match.group(0)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "migrations.py"  # the v5 table rebuild copies whole rows on purpose
        for match in POSITIONAL.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
