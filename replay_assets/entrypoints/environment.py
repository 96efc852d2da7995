"""Settings from the process environment and the home's settings file: what every shell reads
first, without importing Dagster (``status`` and ``export`` answer without it)."""

from __future__ import annotations

import os

from replay_assets.core.config import Settings, SettingsError, config_path, settings_from


def settings_from_environment(home: str | None = None) -> Settings:
    path = config_path(os.environ, home)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError):
        raise SettingsError(f"{path.name} cannot be read as UTF-8 text") from None
    return settings_from(os.environ, home, text)
