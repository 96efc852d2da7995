"""Schema evolution by declared upcasters — pure.

A source may declare, per ``schema_version`` other than 1, how an event of that version maps onto
the contract: fields renamed, fields dropped, fields the version writes in a wider JSON type, and
fields it no longer sends filled with defaults (an image default fills only an image of an entity
that has that field). An event of a declared version is upcast before
validation, so every rule of the contract still applies to the result; an undeclared version
still blocks its batch (the schema gate).

The operations run in a fixed order — drop, rename, widen, add — then ``schema_version``
becomes 1. A path is an envelope field (``"tenant"``) or a field of the key or the row image
(``"key.line_no"``, ``"after.amount_minor"``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from replay_assets.core.events import IMAGE_FIELDS, MAX_INT, SCHEMA_VERSION, canonical_json, sha256_text
from replay_assets.core.names import NameKind, is_name
from replay_assets.core.strict_json import exact_integer, shown

NESTED = frozenset({"key", "after"})
OPERATIONS = ("drop", "rename", "widen", "add")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,79}")
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,13}")
_VERSION_TEXT = re.compile(r"0|[1-9][0-9]{0,12}")
_WORD = re.compile(r"[A-Za-z0-9_-]{1,80}")
_MANAGED = frozenset({"schema_version", "key", "after"})  # never renamed, dropped or defaulted whole


class Widened(enum.StrEnum):
    """The wider JSON type a version writes an integer field in; upcasting takes an exactly
    integral value back to a JSON integer and leaves anything else for validation to reject."""

    NUMBER = "number"  # 42.0
    STRING = "string"  # "42"


class UpcastError(ValueError):
    """The event cannot be upcast as declared (it is rejected with the reason; nothing is guessed)."""


@dataclass(frozen=True)
class Upcaster:
    """How one ``schema_version`` of one source maps onto the contract."""

    version: int
    drop: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    widen: Mapping[str, Widened] = field(default_factory=dict)
    add: Mapping[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        """Identity of the declaration, recorded with every batch it upcast."""
        return sha256_text(canonical_json(self.declaration()))

    def apply(self, event: Mapping[str, Any]) -> dict[str, Any]:
        return upcast(event, self)

    def declaration(self) -> dict[str, Any]:
        return {
            "drop": list(self.drop),
            "rename": dict(self.rename),
            "widen": {path: str(kind) for path, kind in self.widen.items()},
            "add": dict(self.add),
        }


Upcasters = Mapping[str, Mapping[int, Upcaster]]  # source -> version -> upcaster


def upcast(event: Mapping[str, Any], upcaster: Upcaster) -> dict[str, Any]:
    """The event rewritten as ``schema_version`` 1. Raises :class:`UpcastError` when a renamed
    field and its new name are both present (which value is meant cannot be known)."""
    out = {k: (dict(v) if k in NESTED and isinstance(v, dict) else v) for k, v in event.items()}
    for path in upcaster.drop:
        _pop(out, path)
    for old, new in upcaster.rename.items():
        if not _has(out, old):
            continue
        if _has(out, new):
            version = upcaster.version
            raise UpcastError(f"upcast v{version}: both {old!r} and its new name {new!r} are present")
        _put(out, new, _pop(out, old))
    for path, kind in upcaster.widen.items():
        if _has(out, path):
            _put(out, path, _narrowed(_get(out, path), kind))
    entity = out.get("entity")
    image = IMAGE_FIELDS.get(entity, ()) if isinstance(entity, str) else ()  # type: ignore[call-overload]
    for path, default in upcaster.add.items():
        parent, name = _split(path)
        fits = parent != "after" or name in image  # an image default only for that entity's image
        if fits and not _has(out, path) and _container(out, path) is not None:
            _put(out, path, default)
    out["schema_version"] = SCHEMA_VERSION
    return out


def _narrowed(value: Any, kind: Widened) -> Any:
    whole = exact_integer(value) if kind is Widened.NUMBER and isinstance(value, float) else None
    if whole is not None and abs(whole) <= MAX_INT:  # decided on the number's text, not its float
        return whole
    if kind is Widened.STRING and isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    return value  # already an integer, or not integral: validation decides


def _split(path: str) -> tuple[str | None, str]:
    head, _, tail = path.partition(".")
    return (head, tail) if tail else (None, head)


def _container(event: dict[str, Any], path: str) -> dict[str, Any] | None:
    parent, _ = _split(path)
    if parent is None:
        return event
    inner = event.get(parent)
    return inner if isinstance(inner, dict) else None  # a delete's null image gets no fields


def _has(event: dict[str, Any], path: str) -> bool:
    box = _container(event, path)
    return box is not None and _split(path)[1] in box


def _get(event: dict[str, Any], path: str) -> Any:
    box = _container(event, path)
    assert box is not None
    return box[_split(path)[1]]


def _pop(event: dict[str, Any], path: str) -> Any:
    box = _container(event, path)
    return box.pop(_split(path)[1], None) if box is not None else None


def _put(event: dict[str, Any], path: str, value: Any) -> None:
    box = _container(event, path)
    if box is not None:
        box[_split(path)[1]] = value


def parse_upcasters(value: Any) -> dict[str, dict[int, Upcaster]]:
    """The settings file's ``upcasters``: ``{source: {version: {drop, rename, widen, add}}}``.
    Raises ValueError naming the source, the version and the rule broken."""
    if not isinstance(value, dict):
        raise ValueError("upcasters is not an object of source -> version -> upcaster")
    out: dict[str, dict[int, Upcaster]] = {}
    for source, versions in value.items():
        if not is_name(NameKind.SOURCE, source):
            raise ValueError(f"upcasters.{_shown(source)}: not a source name")
        if not isinstance(versions, dict):
            raise ValueError(f"upcasters.{source} is not an object of version -> upcaster")
        out[source] = {}
        for text, spec in versions.items():
            where = f"upcasters.{source}.{_shown(text)}"
            version = _version(text, where)
            out[source][version] = _upcaster(version, spec, where)
    return out


def _version(text: str, where: str) -> int:
    """A version has one text (``"2"``, never ``"02"``, ``"+2"`` or ``"٢"``), so two keys of one
    object can never declare the same version, the later silently replacing the first."""
    if not (_VERSION_TEXT.fullmatch(text) and int(text) <= MAX_INT and int(text) != SCHEMA_VERSION):
        raise ValueError(
            f"{where}: a version is a whole number other than {SCHEMA_VERSION}, written canonically "
            f"(ASCII digits, no leading zero, at most {MAX_INT})"
        )
    return int(text)


def _shown(key: str) -> str:
    return key if _WORD.fullmatch(key) else shown(key)  # a plain word reads as a path


def _upcaster(version: int, spec: Any, where: str) -> Upcaster:
    if not isinstance(spec, dict):
        raise ValueError(f"{where} is not an object")
    unknown = sorted(set(spec) - set(OPERATIONS))
    if unknown:
        raise ValueError(f"{where}: unknown operation {unknown[0]!r} (known: {', '.join(OPERATIONS)})")
    drop = spec.get("drop", [])
    if not isinstance(drop, list):
        raise ValueError(f"{where}.drop is not a list of paths")
    rename, widen, add = (spec.get(op, {}) for op in ("rename", "widen", "add"))
    for op, mapping in (("rename", rename), ("widen", widen), ("add", add)):
        if not isinstance(mapping, dict):
            raise ValueError(f"{where}.{op} is not an object keyed by path")
    for path in [*drop, *rename, *rename.values(), *widen, *add]:
        _check_path(path, where)
    for old, new in rename.items():
        if _split(old)[0] != _split(new)[0]:
            raise ValueError(f"{where}.rename: {old!r} -> {new!r} moves a field to another object")
    targets = list(rename.values())
    if len(set(targets)) != len(targets):
        raise ValueError(f"{where}.rename: two fields are renamed to one name")
    if overlap := sorted(set(drop) & (set(rename) | set(targets))):
        raise ValueError(f"{where}: {overlap[0]!r} is both dropped and renamed")
    kinds = {str(k) for k in Widened}
    if bad := [path for path, kind in widen.items() if kind not in kinds]:
        raise ValueError(f"{where}.widen: {bad[0]!r} names no wider type (known: {', '.join(sorted(kinds))})")
    return Upcaster(
        version,
        drop=tuple(drop),
        rename=dict(rename),
        widen={path: Widened(kind) for path, kind in widen.items()},
        add=dict(add),
    )


def _check_path(path: Any, where: str) -> None:
    if not isinstance(path, str):
        raise ValueError(f"{where}: a path is a string")
    parts = path.split(".")
    good = (len(parts) == 1 and parts[0] not in _MANAGED) or (len(parts) == 2 and parts[0] in NESTED)
    if not (good and all(_NAME.fullmatch(p) for p in parts)):
        raise ValueError(
            f"{where}: {path!r} is not a field path (a name, or key.NAME or after.NAME; "
            "schema_version, key and after are not paths)"
        )
