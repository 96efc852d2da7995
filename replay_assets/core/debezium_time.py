"""Dates and instants as Debezium encodes them, decoded into the contract's types — pure.

``io.debezium.time.Date`` and Connect's ``Date`` count days since 1970; ``Timestamp`` (ms),
``MicroTimestamp``, ``NanoTimestamp`` and Connect's ``Timestamp`` (ms) count since the epoch;
``ZonedTimestamp`` is ISO text with an offset. The epoch counts are read as UTC (Debezium writes
a column without a time zone as its wall clock read as UTC); a timestamp's business date is its
calendar day in the declared ``time_zone`` (an IANA name; UTC when none is declared), and an
``event_time`` is the instant in UTC with every digit the encoding has.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from typing import Any

DAYS = frozenset({"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"})
EPOCH_DIGITS = {  # fractional digits of a second each epoch encoding counts in
    "io.debezium.time.Timestamp": 3,
    "org.apache.kafka.connect.data.Timestamp": 3,
    "io.debezium.time.MicroTimestamp": 6,
    "io.debezium.time.NanoTimestamp": 9,
}
ZONED = "io.debezium.time.ZonedTimestamp"
TIME_TYPES = frozenset({ZONED, *DAYS, *EPOCH_DIGITS})
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ZONE = re.compile(r"[A-Za-z0-9_+-]{1,40}(/[A-Za-z0-9_+-]{1,40}){0,3}")


class BadValue(ValueError):
    """A column value the contract cannot take as it is encoded; the message names the field,
    the column and the rule (never the value)."""


def business_date(value: Any, logical: str | None, time_zone: str | None, where: str) -> Any:
    """A date as YYYY-MM-DD: days since 1970, or a timestamp's day in ``time_zone`` (UTC)."""
    if logical in DAYS or (logical is None and isinstance(value, int)):
        if not isinstance(value, int):
            raise BadValue(f"{where} is not a whole number of days since 1970-01-01")
        try:
            return (EPOCH + dt.timedelta(days=value)).date().isoformat()
        except OverflowError:
            raise BadValue(f"{where} is a day outside the calendar") from None
    if logical in EPOCH_DIGITS or logical == ZONED:
        zone = zoneinfo.ZoneInfo(time_zone) if time_zone else dt.UTC
        return _in_zone(_moment(value, logical, where), zone, where).date().isoformat()
    return value


def instant(value: Any, logical: str | None, where: str) -> str | None:
    """An ISO-8601 UTC instant (``...Z``) from a timestamp encoding, None without one. An epoch
    count keeps all its digits (a nanosecond one too)."""
    if logical in EPOCH_DIGITS:
        digits = EPOCH_DIGITS[logical]
        moment = _moment(value, logical, where)
        fraction = value % 10**digits
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:0{digits}d}Z"
    if logical == ZONED:
        moment = _in_zone(_moment(value, logical, where), dt.UTC, where)
        return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return None


def _moment(value: Any, logical: str | None, where: str) -> dt.datetime:
    if logical == ZONED:
        try:
            moment = dt.datetime.fromisoformat(value) if isinstance(value, str) and len(value) < 64 else None
        except ValueError:
            moment = None
        if moment is None or moment.utcoffset() is None:
            raise BadValue(f"{where} is not an ISO-8601 timestamp with an offset (ZonedTimestamp)")
        return moment
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadValue(f"{where} is not a whole count since 1970 ({logical})")
    seconds = value // 10 ** EPOCH_DIGITS[str(logical)]
    try:
        return EPOCH + dt.timedelta(seconds=seconds)
    except OverflowError:
        raise BadValue(f"{where} is an instant outside the years 1..9999") from None


def _in_zone(moment: dt.datetime, zone: dt.tzinfo, where: str) -> dt.datetime:
    """The instant in ``zone``; one that leaves the calendar there (the first or last hours of
    the years 1..9999) is refused like any instant outside them."""
    try:
        return moment.astimezone(zone)
    except OverflowError:
        raise BadValue(f"{where} is an instant outside the years 1..9999") from None


def known_zone(name: Any) -> bool:
    """An IANA time zone name zoneinfo knows (checked against its pattern before any lookup)."""
    if not isinstance(name, str) or not _ZONE.fullmatch(name) or ".." in name:
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True
