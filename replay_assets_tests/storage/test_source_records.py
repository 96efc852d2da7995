"""An adapter's source records (issue 15 item 2): declared in the manifest, verified like a data
file, landed beside the events, removed with them by a relanding, never parsed as events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_assets.core import debezium
from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.manifest import Limits, ManifestError, parse_manifest
from replay_assets.core.status import DateStatus
from replay_assets.storage.landing.deliveries import create_delivery
from replay_assets.usecases.land import land
from replay_assets_tests.core.test_debezium import INVENTORY
from replay_assets_tests.storage.test_bad_input import D1, NOW, make_pipeline, rows, statuses

FIXTURE = Path(__file__).parent.parent / "fixtures" / "debezium_mysql.jsonl"
MAPPING = debezium.parse_mappings({"mysql": {"tables": INVENTORY}})["mysql"]


def deliver(home: Path) -> Path:
    native, records = debezium.adapt_file(FIXTURE.read_text(encoding="utf-8").splitlines(), MAPPING)
    manifest, written = create_delivery(
        home / "landing", "mysql", D1, "DBZ", native, f"{D1}T06:00:00Z", source_records=records
    )
    assert written
    return manifest


def test_the_records_land_beside_the_events(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path, NOW)
    manifest = deliver(tmp_path)
    declared = json.loads(manifest.read_text())["source_records"]
    assert declared["path"] == "DBZ.source.jsonl" and declared["events"] == 6
    land(p, D1)
    assert rows(p, "SELECT count(*), count(line_number), min(source_file) FROM source_records") == [
        (6, 5, "DBZ.jsonl")
    ]
    # the customers and the delete stage; the two orders of 2016 are before the business dates
    assert rows(p, "SELECT count(*) FROM staged_events") == [(3,)]
    assert rows(
        p, "SELECT count(*) FROM rejected_events WHERE reason_code = 'BUSINESS_DATE_OUT_OF_RANGE'"
    ) == [(2,)]


def test_a_tampered_records_file_blocks_the_delivery_and_lands_nothing(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path, NOW)
    folder = deliver(tmp_path).parent
    (folder / "DBZ.source.jsonl").write_text("{}\n" * 6)
    with pytest.raises(ReplayError) as blocked:
        land(p, D1)
    assert blocked.value.code is ErrorCode.NOT_READY and "DBZ.source.jsonl" in str(blocked.value)
    assert rows(p, "SELECT count(*) FROM raw_receipts") == [(0,)]
    assert rows(p, "SELECT count(*) FROM source_records") == [(0,)]


def test_a_missing_records_file_leaves_the_delivery_not_ready(tmp_path: Path) -> None:
    p = make_pipeline(tmp_path, NOW)
    (deliver(tmp_path).parent / "DBZ.source.jsonl").unlink()
    status, reason = statuses(p)[D1]
    assert status is DateStatus.BLOCKED_UPSTREAM and "file DBZ.source.jsonl is missing" in reason


def test_the_manifest_field_is_checked() -> None:
    entry = {"path": "a.jsonl", "sha256": "0" * 64, "events": 1}
    base = {"source": "s", "batch_id": "b", "load_date": D1, "ready_at": NOW, "schema_version": 1}
    parsed = parse_manifest(json.dumps({**base, "files": [], "source_records": entry}), Limits())
    assert parsed.source_records is not None and parsed.all_files == (parsed.source_records,)
    with pytest.raises(ManifestError, match="names a file of 'files'"):
        parse_manifest(json.dumps({**base, "files": [entry], "source_records": entry}), Limits())
    with pytest.raises(ManifestError, match="not \\{path, sha256"):
        parse_manifest(json.dumps({**base, "files": [], "source_records": "a.jsonl"}), Limits())
