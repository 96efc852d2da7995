"""`replay-assets ui`: an empty home gets the sample scenario once; a filled one is refused it.
The served UI is opened in a real browser by ``ui/test_sample.py`` (and ``ui/test_browser.py``
runs on ``--no-sample``)."""

from pathlib import Path

import pytest

from replay_assets.entrypoints.cli import main

pytestmark = pytest.mark.slow


def test_dry_run_seeds_an_empty_home_once_and_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("REPLAY_ASSETS_NOW", "DAGSTER_HOME", "REPLAY_ASSETS_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    assert main(["ui", "--home", str(home), "--port", "3111", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "landing the sample scenario" in out
    assert f"dev -w {home / 'dagster' / 'workspace.yaml'} -h 127.0.0.1 -p 3111" in out
    assert list((home / "landing").glob("*/*/*.manifest.json"))
    assert (home / "dagster" / "dagster.yaml").exists()
    sampled = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert main(["ui", "--home", str(home), "--dry-run"]) == 2  # a filled home is refused the sample
    assert "is not empty" in capsys.readouterr().err
    assert main(["ui", "--home", str(home), "--no-sample", "--dry-run"]) == 0  # and opened without it
    assert "landing the sample scenario" not in capsys.readouterr().out
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == sampled
    empty = tmp_path / "empty"
    assert main(["ui", "--home", str(empty), "--no-sample", "--dry-run"]) == 0
    assert "landing the sample scenario" not in capsys.readouterr().out
    assert not list((empty / "landing").glob("*/*/*.manifest.json"))
