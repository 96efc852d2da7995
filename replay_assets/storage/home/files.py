"""Reading files of the landing area without trusting the filesystem (hostile input).

A delivered file or manifest is opened only as a regular file directly inside its folder: never
through a symlink (``O_NOFOLLOW``, the folder too), never a FIFO, device or directory (``fstat``
after a non-blocking open, so a FIFO cannot hang the reader while it holds the warehouse lock).
Lines are bounded while they are read: an over-long line is hashed and counted as it streams
past and only a short prefix is kept as evidence; a line that is not UTF-8 is kept as a
backslash-escaped rendering. Neither is repaired: both become rejections with their reason.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from replay_assets.core.errors import RejectReason

BLOCK_BYTES = 16 << 20  # read size when streaming a delivery file
EVIDENCE_BYTES = 4096  # what is kept of an over-long line


class NotRegularFile(OSError):
    """A name in the landing area that is not a regular file in its folder (names the file)."""


@dataclass(frozen=True)
class LineProblem:
    """A line rejected while it was read: the reason, and the sha256 of its raw bytes."""

    reason: RejectReason
    detail: str
    sha256: str


def open_regular(folder: Path, name: str) -> BinaryIO:
    """``name`` opened for binary reading as a regular file directly inside ``folder``.
    Raises :class:`FileNotFoundError` when absent, :class:`NotRegularFile` for a symlink (at the
    file or the folder), FIFO, socket, device or directory. Never blocks."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotRegularFile(f"the folder of {name} is not a plain folder (a symlink?)") from None
        raise
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotRegularFile(f"{name} is a symlink, not a regular file") from None
        raise
    finally:
        os.close(dir_fd)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(f"{name} is {_kind(mode)}, not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def regular_stat(path: Path) -> os.stat_result | None:
    """``lstat`` of ``path`` when it is a regular file (a symlink is not followed); None when
    absent. Raises :class:`NotRegularFile` for anything else. Sensor-grade: one system call."""
    try:
        facts = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(facts.st_mode):
        raise NotRegularFile(f"{path.name} is {_kind(facts.st_mode)}, not a regular file")
    return facts


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a device or special file"


def read_bounded(folder: Path, name: str, limit: int) -> bytes:
    """The whole content of a small regular file, refused past ``limit`` bytes before reading
    more than ``limit + 1``."""
    with open_regular(folder, name) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{name} exceeds {limit} bytes")
    return data


Lines = tuple[list[str], dict[int, LineProblem]]


def text_lines(fh: BinaryIO, digest: Any, limit: int) -> Iterator[Lines]:
    """A file's lines in blocks (``BLOCK_BYTES`` at a time), feeding ``digest`` with every byte.
    Each block is ``(lines, problems)``: problems maps a line's index in the block to why it was
    rejected while reading (its line holds the evidence text). A line, however long, never
    costs more memory than one read block: past ``limit`` bytes it is only hashed and counted."""
    rest = b""
    long: _LongLine | None = None
    while block := fh.read(BLOCK_BYTES):
        digest.update(block)
        out: list[str] = []
        problems: dict[int, LineProblem] = {}
        if long is not None:
            end = block.find(b"\n")
            long.add(block if end < 0 else block[:end])
            if end < 0:
                continue
            problems[0] = long.problem(limit)
            out.append(long.evidence())
            long, block = None, block[end + 1 :]
        block = rest + block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        _split(block[:cut], limit, out, problems)
        if len(rest) > limit:
            long, rest = _LongLine(rest), b""
        if out:
            yield out, problems
    if long is not None:
        yield [long.evidence()], {0: long.problem(limit)}
    elif rest:
        out, problems = [], {}
        _split(rest + b"\n", limit, out, problems)
        yield out, problems


def _split(complete: bytes, limit: int, out: list[str], problems: dict[int, LineProblem]) -> None:
    """Append the lines of ``complete`` (whole lines, each ending in a newline) to ``out``."""
    if not complete:
        return
    try:
        lines = complete.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError:
        lines = None
    if lines is not None and (len(complete) <= limit or all(len(s) * 4 <= limit for s in lines)):
        out += lines
        return
    for raw in complete.split(b"\n")[:-1]:
        index = len(out)
        if len(raw) > limit:
            long = _LongLine(raw)
            problems[index] = long.problem(limit)
            out.append(long.evidence())
            continue
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as bad:
            problems[index] = LineProblem(
                RejectReason.INVALID_UTF8,
                f"line is not valid UTF-8 (byte {bad.start}); kept backslash-escaped",
                hashlib.sha256(raw).hexdigest(),
            )
            out.append(raw.decode("utf-8", errors="backslashreplace"))


class _LongLine:
    """An over-long line as it streams past: its hash, its length and a short prefix."""

    def __init__(self, start: bytes) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self.prefix = b""
        self.add(start)

    def add(self, data: bytes) -> None:
        self.digest.update(data)
        self.size += len(data)
        if len(self.prefix) < EVIDENCE_BYTES:
            self.prefix += data[: EVIDENCE_BYTES - len(self.prefix)]

    def evidence(self) -> str:
        return self.prefix.decode("utf-8", errors="backslashreplace")

    def problem(self, limit: int) -> LineProblem:
        return LineProblem(
            RejectReason.LINE_TOO_LONG,
            f"line exceeds {limit} bytes ({self.size}); its first {len(self.prefix)} bytes are kept",
            self.digest.hexdigest(),
        )


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file, fsync, rename, fsync the folder: a reader sees the old file or the new one."""
    tmp = temp_path(path)
    with open(tmp, "wb") as fh:
        fh.write(data)
    atomic_replace(tmp, path)


def temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def atomic_replace(tmp: Path, path: Path) -> None:
    """Make a fully written ``tmp`` durable, then rename it over ``path`` and fsync the folder."""
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
