"""Settings from the process environment and the home's settings file: what every shell reads
first, without importing Dagster (``status`` and ``export`` answer without it)."""

from __future__ import annotations

import os

from replay_assets.core.config import CONFIG_FILE, Settings, SettingsError, home_path, settings_from


def settings_from_environment(home: str | None = None) -> Settings:
    """The settings, with the home as an absolute path: a child process started in another
    working directory (``backfill``'s Dagster commands) finds the same home."""
    root = home_path(os.environ, home).absolute()
    path = root / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError):
        raise SettingsError(f"{path.name} cannot be read as UTF-8 text") from None
    return settings_from(os.environ, str(root), text)
