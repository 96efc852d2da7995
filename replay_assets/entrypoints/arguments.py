"""Argument types of the command line: a value that is not valid is a usage error (exit 2)
before anything is read or written, naming the rule, never the value."""

import argparse
from collections.abc import Callable

from replay_assets.core.manifest import ManifestError, parse_instant
from replay_assets.core.names import BadName, NameKind, check_name


def name_of(kind: NameKind) -> Callable[[str], str]:
    """An argparse type: the value when it is a valid name of ``kind``, else a usage error
    (exit 2) naming the rule, not the value."""

    def check(value: str) -> str:
        try:
            return check_name(kind, value)
        except BadName as bad:
            raise argparse.ArgumentTypeError(str(bad)) from None

    return check


def instant(value: str) -> str:
    try:
        parse_instant(value, "value")
    except ManifestError:
        raise argparse.ArgumentTypeError("not an ISO-8601 instant with a zone") from None
    return value


DAY = name_of(NameKind.LOAD_DATE)
