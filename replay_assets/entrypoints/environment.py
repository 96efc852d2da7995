"""Settings from the process environment and the home's settings file: what every shell reads
first, without importing Dagster (``status`` and ``export`` answer without it)."""

from __future__ import annotations

import os
from pathlib import Path

from replay_assets.core.config import (
    CONFIG_BYTES,
    CONFIG_FILE,
    Settings,
    SettingsError,
    home_path,
    settings_from,
)
from replay_assets.storage.home.files import read_bounded


def settings_from_environment(home: str | None = None) -> Settings:
    """The settings, with the home as an absolute path: a child process started in another
    working directory (``backfill``'s Dagster commands) finds the same home."""
    root = home_path(os.environ, home).absolute()
    return settings_from(os.environ, str(root), settings_text(root / CONFIG_FILE))


def settings_text(path: Path) -> str | None:
    """The settings file's text, None when there is none. Read with the rules of deliveries
    (hostile input): a regular file only, never through a symlink, opened non-blocking (a FIFO there
    cannot hang a command), refused past ``CONFIG_BYTES``; anything else is a
    :class:`SettingsError` naming the file. The home itself may be reached through a symlink."""
    try:
        data = read_bounded(path.parent.resolve(), path.name, CONFIG_BYTES)
        return data.decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SettingsError(f"{path.name} is not UTF-8 text") from None
    except (OSError, ValueError) as bad:  # NotRegularFile, too large, unreadable
        raise SettingsError(f"{path.name} cannot be read: {_reason(bad)}") from None


def _reason(error: Exception) -> str:
    return str(error) if not isinstance(error, OSError) or not error.strerror else error.strerror
