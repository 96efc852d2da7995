"""Seed scenarios as deliveries into a home's landing area: used by the demo and the tests."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

FIXTURES = resources.files(__name__) / "fixtures"


def fixture(name: str) -> Any:
    """A seed fixture shipped with the package (``replay_assets/demo/scenarios/fixtures``)."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))
