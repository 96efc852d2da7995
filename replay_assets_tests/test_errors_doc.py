"""docs/errors.md lists every reason and error code that can be raised, and only those."""

import re
from pathlib import Path

from replay_assets.core.errors import ErrorCode, RejectReason, Violation

ROOT = Path(__file__).resolve().parents[1]


def documented() -> set[str]:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    return {code for first in rows for code in re.findall(r"`([A-Z0-9_]+)`", first)}


def sources() -> str:
    files = (ROOT / "replay_assets").rglob("*.py")
    return "\n".join(p.read_text(encoding="utf-8") for p in files if p.name != "errors.py")


def test_every_code_is_documented_and_every_documented_code_exists() -> None:
    codes = {c.value for enum in (RejectReason, Violation, ErrorCode) for c in enum}
    assert documented() == codes


def test_every_code_can_be_raised() -> None:
    text = sources()
    unused = [
        f"{enum.__name__}.{member.name}"
        for enum in (RejectReason, Violation, ErrorCode)
        for member in enum
        if not re.search(rf"\b{enum.__name__}\.{member.name}\b", text)
    ]
    assert unused == []
