"""Names that become paths or keys, validated by kind before any file is written or read
(hostile input). One validator per kind, used by ``land``, the landing-area scanner and the
command line alike. Pure.

A path name starts with a letter or digit and holds only letters, digits, ``_``, ``.`` and
``-``: no separator, no ``..`` component, no leading dot (temporary files), nothing a shell
reads specially. Messages name the kind and the rule, never the offending text.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from typing import Any


class NameKind(enum.StrEnum):
    SOURCE = "source"
    BATCH_ID = "batch id"
    LOAD_DATE = "load date"
    FILE = "file name"


PATH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}")
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
RULES = {
    NameKind.SOURCE: "1 to 80 of A-Z a-z 0-9 _ . -, starting with a letter or digit",
    NameKind.BATCH_ID: "1 to 80 of A-Z a-z 0-9 _ . -, starting with a letter or digit",
    NameKind.LOAD_DATE: "a calendar date YYYY-MM-DD",
    NameKind.FILE: "1 to 200 of A-Z a-z 0-9 _ . -, starting with a letter or digit",
}


class BadName(ValueError):
    """A name that breaks its kind's rule; the message names the kind and the rule."""

    def __init__(self, kind: NameKind, rule: str | None = None) -> None:
        super().__init__(f"the {kind} is not {rule or RULES[kind]}")
        self.kind = kind


def check_name(kind: NameKind, value: Any) -> str:
    """``value`` when it is a valid name of ``kind``; else :class:`BadName`. Total."""
    if not isinstance(value, str):
        raise BadName(kind)
    if kind is NameKind.LOAD_DATE:
        parse_day(value)
        return value
    pattern = FILE_NAME if kind is NameKind.FILE else PATH_NAME
    if not pattern.fullmatch(value):
        raise BadName(kind)
    return value


def is_name(kind: NameKind, value: Any) -> bool:
    try:
        check_name(kind, value)
    except BadName:
        return False
    return True


def parse_day(value: Any, kind: NameKind = NameKind.LOAD_DATE) -> dt.date:
    """A calendar date written exactly ``YYYY-MM-DD`` (``2026-1-1`` and ``2026-13-45`` are not)."""
    if not isinstance(value, str) or not DAY.fullmatch(value):
        raise BadName(kind, RULES[NameKind.LOAD_DATE])
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise BadName(kind, RULES[NameKind.LOAD_DATE]) from None
