"""JSON as the contract reads it: a duplicated key in any object is an error, never "last one
wins" (SPEC 10). Used for manifests, events and the settings file. Pure."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class DuplicateKey(ValueError):
    """An object names a key twice; the message names the key (a field name, never a value)."""

    def __init__(self, key: str) -> None:
        shown = key if key.isascii() and key.isprintable() and len(key) <= 80 else "(unprintable)"
        super().__init__(f"an object has the key {shown!r} twice")
        self.key = key


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey(key)
        obj[key] = value
    return obj


def loads(text: str, parse_float: Callable[[str], Any] | None = None) -> Any:
    """``json.loads`` that rejects duplicated keys (:class:`DuplicateKey`, a ``ValueError``);
    ``parse_float`` reads a number with a fraction or an exponent from its text, as json's hook."""
    return json.loads(text, object_pairs_hook=_unique_object, parse_float=parse_float)
