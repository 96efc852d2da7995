"""Delivery manifests (SPEC 2.1): parsing errors, cheap readiness, full verification."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.events import canonical_json, sha256_text
from replay_assets.core.manifest import (
    FileFacts,
    Limits,
    Manifest,
    ManifestError,
    ManifestFile,
    cheap_readiness,
    parse_manifest,
    verify_file,
)

LIMITS = Limits()
SHA = "a" * 64
NOW = dt.datetime(2026, 9, 21, 9, 0, tzinfo=dt.UTC)


def manifest_obj(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "source": "erp",
        "batch_id": "B20260921-CDC-A",
        "load_date": "2026-09-21",
        "ready_at": "2026-09-21T08:12:00Z",
        "schema_version": 1,
        "source_seq_low": 201,
        "source_seq_high": 206,
        "files": [{"path": "B20260921-CDC-A.jsonl", "sha256": SHA, "events": 8}],
    }
    obj.update(changes)
    return obj


def without(name: str) -> dict[str, Any]:
    obj = manifest_obj()
    del obj[name]
    return obj


def file_entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": "part-1.jsonl", "sha256": SHA, "events": 3}
    entry.update(changes)
    return entry


def test_parse_valid_manifest() -> None:
    m = parse_manifest(json.dumps(manifest_obj()), LIMITS)
    assert m.source == "erp"
    assert m.batch_id == "B20260921-CDC-A"
    assert m.load_date == "2026-09-21"
    assert m.ready_at == dt.datetime(2026, 9, 21, 8, 12, tzinfo=dt.UTC)
    assert m.schema_version == 1
    assert (m.seq_low, m.seq_high) == (201, 206)
    assert m.files == (ManifestFile("B20260921-CDC-A.jsonl", SHA, 8, None),)
    assert m.supersedes == ()
    assert m.sha256 == sha256_text(canonical_json(manifest_obj()))


def test_parse_minimal_and_empty_delivery() -> None:
    obj = manifest_obj(files=[])
    del obj["source_seq_low"], obj["source_seq_high"]
    m = parse_manifest(json.dumps(obj), LIMITS)
    assert m.files == ()
    assert (m.seq_low, m.seq_high) == (None, None)


def test_parse_ready_at_with_offset_is_normalised_to_utc() -> None:
    m = parse_manifest(json.dumps(manifest_obj(ready_at="2026-09-21T10:12:00+02:00")), LIMITS)
    assert m.ready_at == dt.datetime(2026, 9, 21, 8, 12, tzinfo=dt.UTC)
    assert m.ready_at.utcoffset() == dt.timedelta(0)


def test_parse_optional_bytes_and_supersedes() -> None:
    obj = manifest_obj(files=[file_entry(bytes=120)], supersedes=["B20260921-CDC-0"])
    m = parse_manifest(json.dumps(obj), LIMITS)
    assert m.files == (ManifestFile("part-1.jsonl", SHA, 3, 120),)
    assert m.supersedes == ("B20260921-CDC-0",)


def test_identity_ignores_key_order_and_whitespace_but_not_content() -> None:
    obj = manifest_obj()
    reordered = dict(reversed(list(obj.items())))
    a = parse_manifest(json.dumps(obj), LIMITS)
    b = parse_manifest(json.dumps(reordered, indent=2), LIMITS)
    c = parse_manifest(json.dumps(manifest_obj(ready_at="2026-09-21T08:13:00Z")), LIMITS)
    assert a.sha256 == b.sha256
    assert a.sha256 != c.sha256


ERROR_CASES: list[tuple[str, str, str]] = [
    ("bad-json", "{not json", "not valid JSON"),
    ("empty", "", "not valid JSON"),
    ("json-array", "[]", "not a JSON object"),
    ("json-string", '"manifest"', "not a JSON object"),
    *[(f"missing-{name}", json.dumps(without(name)), name) for name in ("source", "batch_id", "files")],
    ("missing-load_date", json.dumps(without("load_date")), "load_date"),
    ("missing-ready_at", json.dumps(without("ready_at")), "ready_at"),
    ("missing-schema_version", json.dumps(without("schema_version")), "schema_version"),
    ("unknown-field", json.dumps(manifest_obj(owner="me")), "owner"),
    ("bad-source-id", json.dumps(manifest_obj(source="e r p")), "source"),
    ("bad-batch-id", json.dumps(manifest_obj(batch_id="../B1")), "batch_id"),
    ("batch-id-int", json.dumps(manifest_obj(batch_id=7)), "batch_id"),
    ("bad-date-format", json.dumps(manifest_obj(load_date="2026-9-21")), "load_date"),
    ("bad-date-calendar", json.dumps(manifest_obj(load_date="2026-02-30")), "load_date"),
    ("date-with-time", json.dumps(manifest_obj(load_date="2026-09-21T00:00:00Z")), "load_date"),
    ("ready_at-without-zone", json.dumps(manifest_obj(ready_at="2026-09-21T08:12:00")), "ready_at"),
    ("ready_at-garbage", json.dumps(manifest_obj(ready_at="soon")), "ready_at"),
    ("ready_at-number", json.dumps(manifest_obj(ready_at=1758442320)), "ready_at"),
    ("path-traversal", json.dumps(manifest_obj(files=[file_entry(path="../x")])), "file name"),
    ("path-subfolder", json.dumps(manifest_obj(files=[file_entry(path="a/b")])), "file name"),
    ("path-absolute", json.dumps(manifest_obj(files=[file_entry(path="/etc/passwd")])), "file name"),
    ("path-dot", json.dumps(manifest_obj(files=[file_entry(path=".hidden")])), "file name"),
    ("path-backslash", json.dumps(manifest_obj(files=[file_entry(path="a\\b")])), "file name"),
    ("path-empty", json.dumps(manifest_obj(files=[file_entry(path="")])), "file name"),
    (
        "path-is-a-manifest",
        json.dumps(manifest_obj(files=[file_entry(path="B0.manifest.json")])),
        "file name",
    ),
    ("sha-uppercase", json.dumps(manifest_obj(files=[file_entry(sha256="A" * 64)])), "sha256"),
    ("sha-short", json.dumps(manifest_obj(files=[file_entry(sha256="a" * 63)])), "sha256"),
    ("events-negative", json.dumps(manifest_obj(files=[file_entry(events=-1)])), "events"),
    ("events-bool", json.dumps(manifest_obj(files=[file_entry(events=True)])), "events"),
    ("events-missing", json.dumps(manifest_obj(files=[{"path": "p.jsonl", "sha256": SHA}])), "events"),
    ("bytes-float", json.dumps(manifest_obj(files=[file_entry(bytes=1.5)])), "bytes"),
    ("file-unknown-field", json.dumps(manifest_obj(files=[file_entry(rows=3)])), "files"),
    ("file-not-object", json.dumps(manifest_obj(files=["part-1.jsonl"])), "files"),
    ("files-not-list", json.dumps(manifest_obj(files={"path": "x"})), "files"),
    (
        "duplicate-file",
        json.dumps(manifest_obj(files=[file_entry(), file_entry(sha256="b" * 64)])),
        "twice",
    ),
    ("low-above-high", json.dumps(manifest_obj(source_seq_low=7, source_seq_high=6)), "source_seq_low"),
    ("seq-negative", json.dumps(manifest_obj(source_seq_low=-1)), "source_seq_low"),
    ("seq-string", json.dumps(manifest_obj(source_seq_high="9")), "source_seq_high"),
    ("schema-version-text", json.dumps(manifest_obj(schema_version="1")), "schema_version"),
    ("supersedes-not-list", json.dumps(manifest_obj(supersedes="B0")), "supersedes"),
    ("supersedes-bad-id", json.dumps(manifest_obj(supersedes=["a b"])), "supersedes"),
]


@pytest.mark.parametrize(("text", "needle"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_parse_manifest_errors(text: str, needle: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, LIMITS)
    assert needle in str(caught.value)


def test_oversize_manifest() -> None:
    text = json.dumps(manifest_obj())
    limit = len(text.encode("utf-8"))
    assert parse_manifest(text, Limits(manifest_bytes=limit)).batch_id == "B20260921-CDC-A"
    with pytest.raises(ManifestError, match="exceeds"):
        parse_manifest(text, Limits(manifest_bytes=limit - 1))
    # measured in bytes, not characters
    wide = json.dumps(manifest_obj(), indent=1).replace("\n", "\n" + "\u00a0")
    with pytest.raises(ManifestError, match="exceeds"):
        parse_manifest(wide, Limits(manifest_bytes=len(wide)))


def test_too_many_files() -> None:
    files = [file_entry(path=f"part-{n}.jsonl") for n in range(3)]
    assert len(parse_manifest(json.dumps(manifest_obj(files=files)), Limits(files_per_manifest=3)).files) == 3
    with pytest.raises(ManifestError, match="at most 2"):
        parse_manifest(json.dumps(manifest_obj(files=files)), Limits(files_per_manifest=2))


def test_low_equal_high_is_fine() -> None:
    m = parse_manifest(json.dumps(manifest_obj(source_seq_low=5, source_seq_high=5)), LIMITS)
    assert (m.seq_low, m.seq_high) == (5, 5)


def test_deeply_nested_manifest_is_a_manifest_error() -> None:
    with pytest.raises(ManifestError):
        parse_manifest("[" * 100_000 + "]" * 100_000, LIMITS)


@settings(max_examples=80, deadline=None, database=None)
@given(st.text(max_size=200))
def test_parse_manifest_raises_only_manifest_error_on_text(text: str) -> None:
    try:
        parse_manifest(text, LIMITS)
    except ManifestError:
        pass


json_scalars = st.none() | st.booleans() | st.integers(-5, 10**13) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=80, deadline=None, database=None)
@given(st.sampled_from(sorted(manifest_obj())), json_values)
def test_parse_manifest_raises_only_manifest_error_on_any_field_value(name: str, value: Any) -> None:
    try:
        m = parse_manifest(json.dumps(manifest_obj(**{name: value})), LIMITS)
    except ManifestError:
        return
    assert isinstance(m, Manifest)


# ---- readiness ------------------------------------------------------------------------------


def manifest(files: list[dict[str, Any]] | None = None, ready_at: str = "2026-09-21T08:12:00Z") -> Manifest:
    entries = files if files is not None else [file_entry(path="data.jsonl", events=3, bytes=100)]
    return parse_manifest(json.dumps(manifest_obj(files=entries, ready_at=ready_at)), LIMITS)


def test_ready_when_everything_matches() -> None:
    assert cheap_readiness(manifest(), {"data.jsonl": FileFacts(True, 100)}, NOW, LIMITS) is None


def test_ready_at_exactly_now_is_ready() -> None:
    m = manifest(ready_at="2026-09-21T09:00:00Z")
    assert cheap_readiness(m, {"data.jsonl": FileFacts(True, 100)}, NOW, LIMITS) is None


def test_empty_delivery_is_ready() -> None:
    assert cheap_readiness(manifest(files=[]), {}, NOW, LIMITS) is None


def test_future_ready_at_is_not_ready() -> None:
    m = manifest(ready_at="2026-09-21T11:00:00+01:00")  # 10:00 UTC, an hour after NOW
    reason = cheap_readiness(m, {"data.jsonl": FileFacts(True, 100)}, NOW, LIMITS)
    assert reason is not None
    assert "future" in reason


def test_missing_file_is_not_ready_and_named() -> None:
    for facts in ({}, {"data.jsonl": FileFacts(False, 0)}):
        reason = cheap_readiness(manifest(), facts, NOW, LIMITS)
        assert reason is not None
        assert "data.jsonl" in reason
        assert "missing" in reason


def test_second_file_missing_is_named() -> None:
    m = manifest(files=[file_entry(path="p1.jsonl"), file_entry(path="p2.jsonl")])
    reason = cheap_readiness(m, {"p1.jsonl": FileFacts(True, 10)}, NOW, LIMITS)
    assert reason is not None
    assert "p2.jsonl" in reason


def test_size_mismatch_is_not_ready() -> None:
    reason = cheap_readiness(manifest(), {"data.jsonl": FileFacts(True, 99)}, NOW, LIMITS)
    assert reason is not None
    assert "data.jsonl" in reason
    assert "99" in reason
    assert "100" in reason


def test_size_unchecked_when_not_declared() -> None:
    m = manifest(files=[file_entry(path="data.jsonl")])
    assert cheap_readiness(m, {"data.jsonl": FileFacts(True, 12345)}, NOW, LIMITS) is None


def test_file_over_the_byte_limit_is_not_ready() -> None:
    m = manifest(files=[file_entry(path="data.jsonl")])
    facts = {"data.jsonl": FileFacts(True, 101)}
    assert cheap_readiness(m, facts, NOW, Limits(file_bytes=101)) is None
    reason = cheap_readiness(m, facts, NOW, Limits(file_bytes=100))
    assert reason is not None
    assert "data.jsonl" in reason
    assert "exceeds" in reason


def test_file_over_the_event_limit_is_not_ready() -> None:
    m = manifest(files=[file_entry(path="data.jsonl", events=11)])
    facts = {"data.jsonl": FileFacts(True, 10)}
    assert cheap_readiness(m, facts, NOW, Limits(events_per_file=11)) is None
    reason = cheap_readiness(m, facts, NOW, Limits(events_per_file=10))
    assert reason is not None
    assert "data.jsonl" in reason


# ---- full verification ----------------------------------------------------------------------

DECLARED = ManifestFile("data.jsonl", SHA, 3, 100)


def test_verify_file_matches() -> None:
    assert verify_file(DECLARED, SHA, 3) is None


def test_verify_file_sha_mismatch() -> None:
    reason = verify_file(DECLARED, "b" * 64, 3)
    assert reason is not None
    assert "data.jsonl" in reason
    assert "sha256" in reason


def test_verify_file_count_mismatch() -> None:
    reason = verify_file(DECLARED, SHA, 4)
    assert reason is not None
    assert "data.jsonl" in reason
    assert "4" in reason
    assert "3" in reason


def test_verify_file_sha_is_checked_before_count() -> None:
    reason = verify_file(DECLARED, "c" * 64, 0)
    assert reason is not None
    assert "sha256" in reason
