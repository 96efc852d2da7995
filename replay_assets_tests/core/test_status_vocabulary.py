"""One status vocabulary: every status enum lives in ``core/status.py``, its names are its stored
values, and the waiting statuses of a load date map to partition statuses of the same name."""

from __future__ import annotations

import ast
import enum
from pathlib import Path

import replay_assets
from replay_assets.core import status

ENUMS = [status.DateStatus, status.PartitionStatus, status.ApplyOutcome, status.CommitState]


def test_every_status_name_is_its_stored_value() -> None:
    for kind in ENUMS:
        assert [m.name for m in kind] == [m.value for m in kind], kind.__name__


def test_a_waiting_load_date_gives_its_partition_the_status_of_the_same_name() -> None:
    for date_status, partition_status in status.WAITING_PARTITION_STATUS.items():
        assert date_status.value == partition_status.value


def test_no_status_enum_is_defined_outside_the_status_module() -> None:
    package = Path(replay_assets.__file__).parent
    elsewhere = []
    for path in package.rglob("*.py"):
        if path == package / "core" / "status.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Attribute) and b.attr == "StrEnum" for b in node.bases
            ):
                # (core/fold.py's Outcome classifies one event for the reconciliation columns:
                # a per-event verdict, not a status)
                if node.name.endswith(("Status", "State", "Mode")) or node.name == "ApplyOutcome":
                    elsewhere.append(f"{path.relative_to(package)}:{node.name}")
    assert elsewhere == []
    assert all(issubclass(kind, enum.StrEnum) for kind in ENUMS)
