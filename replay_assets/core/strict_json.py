"""JSON as the contract reads it: a duplicated key in any object is an error, never "last one
wins", and nesting too deep to follow is an error, never a crash. Used for manifests,
events, seed-000 documents, adapted lines and the settings file. Pure."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any


class DuplicateKey(ValueError):
    """An object names a key twice; the message names the key (a field name, never a value)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"an object has the key {shown(key)} twice")
        self.key = key


def shown(key: str) -> str:
    """A key or name as a message shows it: quoted, in printable ASCII (anything else escaped),
    at most 80 characters; a key from input is never printed raw."""
    if key.isascii() and key.isprintable() and len(key) <= 80:
        return repr(key)
    return json.dumps(key[:80])


class TooDeep(ValueError):
    """Arrays or objects nested deeper than the reader can follow (a hostile input, never data)."""

    def __init__(self) -> None:
        super().__init__("its arrays or objects are nested too deeply to read")


class RoundedToInteger(float):
    """A JSON number whose float is an integer other than the number its text says (the text
    ``100.0000000000000001`` reads as ``100.0``, ``1e23`` as ``99999999999999991611392.0``):
    whether a number is exactly an integer is decided on its decimal text, so this float keeps
    the mark that it is not that integer."""

    __slots__ = ()


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey(key)
        obj[key] = value
    return obj


def _number(text: str) -> float:
    value = float(text)
    # only a float that looks integral needs its text read exactly; others stay plain floats
    if value.is_integer() and Decimal(text) != Decimal(value):
        return RoundedToInteger(value)
    return value


def lossless(value: Any) -> Any:
    """``value`` when writing it back as JSON gives the numbers its text said; ValueError when it
    holds a :class:`RoundedToInteger` (its float would be written as the integer it is not)."""
    if isinstance(value, RoundedToInteger):
        raise ValueError("a number is not exactly the integer its float reads as")
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        lossless(item)
    return value


def exact_integer(value: Any) -> int | None:
    """The integer a JSON number denotes exactly, else None: an ``int`` (never a bool), or a
    float whose decimal text is an integer (``2.0``, ``1e2``; not ``100.0000000000000001``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and not isinstance(value, RoundedToInteger):
        return int(value)
    return None


def loads(text: str, parse_float: Callable[[str], Any] | None = None) -> Any:
    """``json.loads`` that rejects duplicated keys (:class:`DuplicateKey`) and nesting it cannot
    follow (:class:`TooDeep`), both ``ValueError``. By default a number's float keeps whether its
    text is exactly an integer (:func:`exact_integer`); ``parse_float`` reads a number with a
    fraction or an exponent from its text instead, as json's hook."""
    try:
        return json.loads(text, object_pairs_hook=_unique_object, parse_float=parse_float or _number)
    except RecursionError:
        raise TooDeep() from None
