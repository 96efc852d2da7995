"""The files the project keeps in its home and reads back (``in_progress.json``, ``clock.json``),
read by the rules of deliveries (``storage/home/files.py``): a regular file directly
in the home, opened non-blocking and never through a symlink (a FIFO cannot hang a command that
holds the home's locks), and bounded before it is buffered. Anything else is refused with
REPLAY_HOME_FILE_REFUSED naming the file and the rule: the project owns these names, so a
directory, a FIFO or a link there is not something to work around."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from replay_assets.core.config import CONFIG_FILE
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.storage.home import files
from replay_assets.storage.home.files import atomic_replace

OWN_FILE_BYTES = 64 << 10  # the project's own notes are a few hundred bytes
# what makes a home not empty: the operator's settings, the warehouse, the landing area and the
# published copy made from them (the Dagster instance folder alone holds no data)
CONTENT = (CONFIG_FILE, "warehouse.duckdb", "landing", "published.duckdb", "published")


def occupants(home: Path) -> list[str]:
    """The names of :data:`CONTENT` present in ``home``, whatever they are (a dangling link or a
    FIFO under such a name counts: it is not an empty home either)."""
    return [name for name in CONTENT if os.path.lexists(Path(home) / name)]


def read_own_file(home: Path, name: str, limit: int = OWN_FILE_BYTES) -> bytes | None:
    """The content of the home's own file ``name`` (``home`` may be a folder of the home the
    project keeps, such as ``published``); None when it (or the folder) does not exist.
    Raises :class:`ReplayError` (REPLAY_HOME_FILE_REFUSED) for a symlink, FIFO, socket, device or
    directory, or past ``limit`` bytes. Never blocks. The home itself may be reached through a
    symlink (the operator's choice); what is inside it is not."""
    try:
        return files.read_bounded(Path(home).resolve(), name, limit)
    except FileNotFoundError:
        return None
    except (files.NotRegularFile, ValueError) as refused:
        raise ReplayError(
            ErrorCode.HOME_FILE_REFUSED,
            f"{refused}: the files the project keeps in its home are read only as regular files of "
            f"at most {limit} bytes; remove it (the project writes it again when it needs it)",
        ) from None


def open_lock(home: Path, name: str) -> int:
    """A descriptor of the home's lock file ``name`` (created when missing), to ``flock``. Opened
    never through a symlink (it would create a file outside the home) and non-blocking; anything
    but a regular file there is refused (REPLAY_HOME_FILE_REFUSED), never a traceback."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(Path(home) / name, flags, 0o644)
    except OSError as error:  # ELOOP for a symlink, EISDIR for a directory
        raise _refused(name, error.strerror or type(error).__name__) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refused(name, "not a regular file")
    return fd


def _refused(name: str, why: str) -> ReplayError:
    return ReplayError(
        ErrorCode.HOME_FILE_REFUSED,
        f"{name} in the home cannot be opened as the project's lock file ({why}): remove it "
        "(the project creates it again)",
    )


def write_own_file(home: Path, name: str, data: bytes) -> None:
    """Replace the home's own file ``name`` whole (a reader sees the old content or the new),
    through a temp file of this call's own: a fixed temp name could be a FIFO or a link
    planted there, and two processes writing at once would share it."""
    fd, tmp = tempfile.mkstemp(dir=home, prefix=f".{name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # as readable as before: a reader may run under another account
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        atomic_replace(Path(tmp), Path(home) / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
