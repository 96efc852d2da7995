"""The kinds of settings values, each with its type and range check (hostile input) — pure.

A check takes a JSON value (from ``replay-assets.json``, or an environment variable's text made
into one by :func:`from_text`) and the name the operator wrote (``slo.freshness_minutes``,
``REPLAY_ASSETS_NOW``), and returns the typed value or raises :class:`BadSetting` naming that
key and the rule. A value that passes works wherever the project uses it later: numbers are
finite and inside a range the calendar, the partitions and the timers can hold. Messages never
quote the value: it may be a secret (a token in the Spark address) or arbitrary text.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from replay_assets.core.manifest import ManifestError, parse_instant
from replay_assets.core.names import BadName, NameKind, check_name

EARLIEST, LATEST = dt.date(1970, 1, 1), dt.date(2999, 12, 31)  # dates and instants: sane years


class BadSetting(ValueError):
    """A settings value outside its declared type or range; names the key and the rule."""


class Kind(Protocol):
    def check(self, value: object, name: str) -> Any: ...


def _number(value: object, name: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadSetting(f"{name} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadSetting(f"{name} is not a finite number")
    return value


@dataclass(frozen=True)
class Whole:
    """A whole number from ``low`` to ``high``; ``35.0`` is 35, ``1.9`` is refused, not cut."""

    low: int
    high: int

    def check(self, value: object, name: str) -> int:
        number = _number(value, name)
        if isinstance(number, float) and not number.is_integer():
            raise BadSetting(f"{name} is not a whole number")
        if not self.low <= number <= self.high:
            raise BadSetting(f"{name} is not a whole number from {self.low} to {self.high}")
        return int(number)


@dataclass(frozen=True)
class Number:
    """A finite number from ``low`` to ``high`` (never nan or infinity)."""

    low: float
    high: float

    def check(self, value: object, name: str) -> float:
        number = _number(value, name)
        if not self.low <= number <= self.high:
            raise BadSetting(f"{name} is not a number from {self.low:g} to {self.high:g}")
        return float(number)


@dataclass(frozen=True)
class Day:
    """A calendar date ``YYYY-MM-DD`` in a sane range of years."""

    def check(self, value: object, name: str) -> str:
        try:
            day = check_name(NameKind.LOAD_DATE, value if isinstance(value, str) else "")
        except BadName:
            raise BadSetting(f"{name} is not a calendar date YYYY-MM-DD") from None
        if not EARLIEST <= dt.date.fromisoformat(day) <= LATEST:
            raise BadSetting(f"{name} is not a date from {EARLIEST} to {LATEST}")
        return day


@dataclass(frozen=True)
class Instant:
    """An ISO-8601 instant with a zone, in UTC, in a sane range of years."""

    def check(self, value: object, name: str) -> dt.datetime:
        try:
            moment = parse_instant(value, name)
        except (ManifestError, OverflowError):
            raise BadSetting(f"{name} is not an ISO-8601 instant with a zone") from None
        if not EARLIEST <= moment.date() <= LATEST:
            raise BadSetting(f"{name} is not an instant from {EARLIEST} to {LATEST}")
        return moment


@dataclass(frozen=True)
class Text:
    """Text matching ``pattern`` (what ``rule`` says); empty text is no value (None) where the
    setting may be unset, and refused where it may not (a field of a section)."""

    pattern: str
    rule: str
    optional: bool = True

    def check(self, value: object, name: str) -> str | None:
        if value == "" and self.optional:
            return None
        if not isinstance(value, str) or not re.fullmatch(self.pattern, value):
            raise BadSetting(f"{name} is not {self.rule}")
        return value


@dataclass(frozen=True)
class Choice:
    options: tuple[str, ...]

    def check(self, value: object, name: str) -> str:
        if value not in self.options:
            raise BadSetting(f"{name} is not one of {', '.join(self.options)}")
        return str(value)


@dataclass(frozen=True)
class SparkAddress:
    """``local`` or a Spark Connect URL ``sc://HOST:PORT`` (port 1..65535), optionally with
    Spark Connect's ``/;key=value`` options (e.g. ``use_ssl``, ``token``)."""

    def check(self, value: object, name: str) -> str:
        rule = f"{name} is neither local nor an sc://HOST:PORT address (port 1..65535)"
        if value == "local":
            return value
        if not isinstance(value, str) or not value.startswith("sc://"):
            raise BadSetting(rule)
        try:
            url = urlsplit("http" + value[2:])
            port = url.port
        except ValueError:
            raise BadSetting(rule) from None
        host = url.hostname or ""
        plain = re.fullmatch(r"[A-Za-z0-9._-]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*", host) is not None
        options = url.path in ("", "/") or url.path.startswith("/;")
        if not plain or port is None or not 1 <= port <= 65535 or not options or url.username is not None:
            raise BadSetting(rule)
        if url.query or url.fragment:
            raise BadSetting(rule)
        return value


@dataclass(frozen=True)
class Section:
    """A JSON object of known fields, each of its own kind, built into a value by ``build``;
    fields are named ``section.field`` in messages."""

    fields: Mapping[str, Kind]
    build: Callable[..., Any]

    def check(self, value: object, name: str) -> Any:
        if not isinstance(value, dict):
            raise BadSetting(f"{name} is not an object")
        unknown = sorted(set(value) - set(self.fields), key=str)
        if unknown:
            raise BadSetting(f"{name} has unknown setting {str(unknown[0])[:80]!r}")
        return self.build(**{f: self.fields[f].check(v, f"{name}.{f}") for f, v in value.items()})


@dataclass(frozen=True)
class Parsed:
    """A value its own module parses (sources, upcasters, Debezium mappings)."""

    parse: Callable[[Any], Any]

    def check(self, value: object, name: str) -> Any:
        return self.parse(value)


def from_text(kind: Kind, text: str) -> object:
    """An environment variable's text as the JSON value it stands for: a number for numeric
    kinds when it reads as one (``nan`` and ``inf`` do, and are refused as not finite), the
    text itself otherwise."""
    if not isinstance(kind, Whole | Number):
        return text
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            continue
    return text
