"""Every settings example the README shows (its ```json blocks) is a valid replay-assets.json."""

import re
from pathlib import Path

import pytest

from replay_assets.core.config import settings_from

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```json\n(.*?)```", README, flags=re.DOTALL)


def test_the_readme_shows_settings_examples() -> None:
    assert len(BLOCKS) >= 2  # the upcasters and the Debezium mapping


@pytest.mark.parametrize("block", BLOCKS)
def test_each_settings_example_parses(block: str) -> None:
    settings = settings_from({}, "home", block)
    assert settings.upcasters or settings.debezium
