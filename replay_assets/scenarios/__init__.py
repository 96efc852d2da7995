"""Seed scenarios as deliveries into a home's landing area: used by the demo and the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "fixtures"


def fixture(name: str) -> Any:
    """A committed seed fixture from ``data/fixtures``."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))
