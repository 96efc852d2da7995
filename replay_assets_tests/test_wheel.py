"""The package is installable: the built wheel, installed into a fresh virtual environment
outside the repository (with the locked dependency versions), runs `replay-assets demo` there.
Fixtures, the instance's dagster.yaml and the scenarios come from the package itself."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-2000:])
    return done


def test_the_built_wheel_runs_the_demo_outside_the_repository(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ASSETS_", "DAGSTER_", "VIRTUAL_ENV"))
    }
    run([uv, "build", "--wheel", "--out-dir", str(tmp_path / "dist")], ROOT, env)
    [wheel] = (tmp_path / "dist").glob("replay_assets-*.whl")
    locked = tmp_path / "requirements.txt"
    export = ["export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "-o", str(locked)]
    run([uv, *export], ROOT, env)
    venv = tmp_path / "venv"
    run([uv, "venv", "--python", sys.executable, str(venv)], tmp_path, env)
    python = str(venv / "bin" / "python")
    run([uv, "pip", "install", "--python", python, "-r", str(locked), str(wheel)], tmp_path, env)

    where = run([python, "-c", "import replay_assets; print(replay_assets.__file__)"], tmp_path, env)
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the installed copy, not the checkout
    demo = run([str(venv / "bin" / "replay-assets"), "demo", "--home", str(tmp_path / "demo")], tmp_path, env)
    assert "demo homes under" in demo.stdout
    assert "seed 004 — the operation journal" in demo.stdout
    assert (tmp_path / "demo" / "seed003" / "dagster" / "dagster.yaml").read_bytes() == (
        ROOT / "replay_assets" / "dagster.yaml"
    ).read_bytes()
