"""Input documents and declarations (SPEC 10, "Hostile input", v4: the rules hold for every input
surface, seed-000 documents and upcaster declarations among them): a duplicated key is refused,
never last-wins; a malformed document is a usage error naming it and the rule, never a
traceback; the adapter the operator names decides how a file is read; an upcaster version has
one text; ``widen`` decides on a number's decimal text.

The command-line tests drive ``main`` in-process on a temporary home and check the exit code,
the message, and that nothing was landed (or exactly what was)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay_assets.core import strict_json
from replay_assets.core.adapters import Adapter, adapt_lines
from replay_assets.core.config import SettingsError, settings_from
from replay_assets.core.errors import RejectReason
from replay_assets.core.events import (
    MAX_INT,
    Event,
    Rejection,
    ValidationContext,
    canonical_json,
    parse_event,
)
from replay_assets.core.upcast import parse_upcasters
from replay_assets.defs.resources import ReplayResource
from replay_assets.demo.scenarios import fixture, seed000, seed001
from replay_assets.entrypoints.cli import main
from replay_assets_tests.storage.test_bad_input import event

CASES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DAY = seed000.LOAD_DATES["initial"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", seed000.NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_FAIL_POINT", "REPLAY_ASSETS_FAIL_ONCE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    yield tmp_path / "home"


def landed(home: Path) -> list[str]:
    """Every file in the landing area, relative to it."""
    landing = home / "landing"
    return (
        sorted(str(p.relative_to(landing)) for p in landing.rglob("*") if p.is_file())
        if landing.exists()
        else []
    )


def land(home: Path, file: Path, *extra: str, source: str = seed000.SOURCE, day: str = DAY) -> int:
    args = ["land", str(file), "--source", source, "--load-date", day, "--ready-at", f"{day}T06:00:00Z"]
    return main([*args, *extra, "--home", str(home)])


def land_document(home: Path, text: str, batch_id: str = "initial") -> int:
    document = home.parent / "demo_batches.json"
    document.write_text(text, encoding="utf-8")
    return land(home, document, "--adapter", "seed000", "--batch-id", batch_id)


# --------------------------------------------------------------------------- seed-000 documents


def test_a_seed000_record_naming_a_key_twice_is_refused_never_last_wins(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: "JSON objects with a duplicated key ... are rejected with reasons, never
    repaired", for seed-000 documents too (v4). The record said 1000 and then 1: neither lands."""
    text = json.dumps(fixture("seed000_demo_batches.json"))
    doubled = text.replace('"amount_minor": 1000', '"amount_minor": 1000, "amount_minor": 1', 1)
    assert doubled != text
    assert land_document(home, doubled) == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and "demo_batches.json" in err and "'amount_minor' twice" in err
    assert "never last-wins" in err
    assert landed(home) == []
    assert land_document(home, text) == 0  # the same document without the second key lands


def test_two_batches_with_one_id_in_a_seed000_document_are_refused(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: a duplicated key is never last-wins; a batch id is a document's key for its
    batch, so a second batch of the same id is refused, never hides the first."""
    document = fixture("seed000_demo_batches.json")
    first = document["batches"][0]
    document["batches"].append({"batch_id": first["batch_id"], "records": first["records"][:1]})
    assert land_document(home, json.dumps(document)) == 2
    err = capsys.readouterr().err
    assert "demo_batches.json" in err and "batch 'initial' twice" in err
    assert landed(home) == []


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
    for inner in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        yield from _objects(inner)


def _render(value: Any, target: dict[str, Any], key: str, second: Any) -> str:
    """JSON text of ``value`` in which the object ``target`` names ``key`` a second time."""
    if isinstance(value, list):
        return "[" + ", ".join(_render(v, target, key, second) for v in value) + "]"
    if not isinstance(value, dict):
        return json.dumps(value)
    pairs = [f"{json.dumps(k)}: {_render(v, target, key, second)}" for k, v in value.items()]
    if value is target:
        pairs.append(f"{json.dumps(key)}: {json.dumps(second)}")
    return "{" + ", ".join(pairs) + "}"


SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=6)


@CASES
@given(data=st.data(), second=SCALARS)
def test_a_key_named_twice_anywhere_in_a_seed000_document_is_refused(
    home: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject, second: Any
) -> None:
    """SPEC 10: duplicated keys are never last-wins, at any depth of a seed-000 document (the
    document, a batch, a record), whatever the second value: exit 2 naming the document."""
    document = fixture("seed000_demo_batches.json")
    target = data.draw(st.sampled_from(list(_objects(document))))
    key = data.draw(st.sampled_from(sorted(target)))
    assert land_document(home, _render(document, target, key, second)) == 2
    err = capsys.readouterr().err
    assert "demo_batches.json" in err and f"{key!r} twice" in err
    assert landed(home) == []


GOOD_RECORD = fixture("seed000_demo_batches.json")["batches"][0]["records"][0]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (json.dumps({"batches": [{"batch_id": 1, "records": []}], "delivery_sequence": [1]}), "batch_id"),
        (json.dumps({"batches": [{"records": [GOOD_RECORD]}], "delivery_sequence": ["initial"]}), "batch_id"),
        (
            json.dumps({"batches": [{"batch_id": None, "records": []}], "delivery_sequence": ["initial"]}),
            "batch_id",
        ),
        (
            json.dumps({"batches": [{"batch_id": "initial", "records": []}], "delivery_sequence": [1]}),
            "delivery",
        ),
        (
            json.dumps(
                {"batches": [{"batch_id": "initial", "records": {}}], "delivery_sequence": ["initial"]}
            ),
            "records",
        ),
        (json.dumps({"batches": {}, "delivery_sequence": ["initial"]}), "batches"),
        (json.dumps({"batches": [], "delivery_sequence": ["initial"]}), "does not hold"),
        (json.dumps([{"batches": []}]), "not a seed-000 document"),
        (DEEP, "nested"),
        ('{"batches": [{"batch_id": "initial", "records": [' + DEEP + "]}]}", "nested"),
        ("{not json", "JSON"),
        ('{"batches": [], "delivery_sequence": []} {}', "JSON"),
    ],
    ids=[
        "integer-batch-id",
        "missing-batch-id",
        "null-batch-id",
        "integer-in-delivery",
        "records-not-a-list",
        "batches-not-a-list",
        "unknown-batch",
        "an-array",
        "100k-brackets",
        "100k-brackets-in-a-record",
        "not-json",
        "two-values",
    ],
)
def test_a_malformed_seed000_document_is_a_usage_error_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, rule: str
) -> None:
    """SPEC 10 (v4): seed-000 documents follow the hostile-input rules; a usage error exits 2
    before anything happens, naming the document and the rule, never a traceback."""
    assert land_document(home, text) == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and "demo_batches.json" in err and rule in err
    assert landed(home) == []


JSON_VALUE = st.recursive(
    SCALARS | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@CASES
@given(
    batch_id=st.one_of(st.just("initial"), JSON_VALUE),
    records=st.one_of(st.just([GOOD_RECORD]), JSON_VALUE, st.lists(JSON_VALUE, max_size=3)),
    delivery=st.one_of(st.just(["initial"]), JSON_VALUE),
)
def test_any_seed000_document_lands_or_is_refused_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str], batch_id: Any, records: Any, delivery: Any
) -> None:
    """SPEC 10 (v4): whatever a seed-000 document holds, `land` lands the batch (a record it
    cannot map is kept for validation to reject with a reason) or exits 2 naming the document;
    it never raises."""
    for old in landed(home):  # a fresh landing area per example: the batch id is used again
        (home / "landing" / old).unlink()
    document = {"batches": [{"batch_id": batch_id, "records": records}], "delivery_sequence": delivery}
    code = land_document(home, json.dumps(document))
    err = capsys.readouterr().err
    assert code in (0, 2)
    if code == 2:
        assert "demo_batches.json" in err
    else:
        data = home / "landing" / seed000.SOURCE / DAY / "initial.jsonl"
        lines = data.read_text(encoding="utf-8").splitlines() if records else []  # none: no data file
        assert len(lines) == len(records)


def test_a_seed001_line_naming_a_key_twice_is_kept_for_rejection_never_last_wins() -> None:
    """SPEC 10: every JSON the project reads goes through the strict reader: a line adapter
    passes a line with a duplicated key on as delivered, and validation rejects it."""
    good = canonical_json(seed001.baseline_events()[0])
    doubled = good[:-1] + ', "op": "D"}'
    [kept] = adapt_lines(Adapter.SEED001, [doubled])
    assert kept == doubled
    outcome = parse_event(kept, ValidationContext(dt.date(2020, 1, 1), dt.date(2030, 1, 1)))
    assert isinstance(outcome, Rejection) and outcome.reason is RejectReason.DUPLICATE_KEY


def test_a_line_adapter_never_rewrites_a_number_it_cannot_write_back_exactly() -> None:
    """SPEC 10, README (upcasters: a lossy value is still rejected): a seed-001 amount written
    ``75.00000000000000001`` reads as the float 75.0; the adapter's canonical text would say
    ``75.0``, which ``widen`` narrows. The line is passed on as delivered, and rejected."""
    good = seed001.baseline_events()[0]
    lossy = canonical_json(good).replace('"extended_amount":75', '"extended_amount":75.00000000000000001')
    assert lossy != canonical_json(good)
    [kept] = adapt_lines(Adapter.SEED001, [lossy])
    assert kept == lossy
    assert isinstance(parse_event(kept, CTX), Rejection)
    exact = canonical_json(good).replace('"extended_amount":75', '"extended_amount":75.0')
    [mapped] = adapt_lines(Adapter.SEED001, [exact])
    assert mapped != exact  # a number written back exactly is adapted as before


def test_the_resources_upcasters_cannot_declare_a_version_twice(tmp_path: Path) -> None:
    """SPEC 10: a version is declared once, also in the typed ``upcasters`` field of the Dagster
    resource (an operator may edit it in the launchpad, where a mapping has one value per key):
    a second spelling of a declared version ("02" beside "2") is refused, never last-wins."""
    resource = ReplayResource.for_settings(settings_from({}, str(tmp_path), None))
    doubled = ReplayResource(
        **{**resource.__dict__, "upcasters": {"erp": {"2": {}, "02": {"drop": ["tenant"]}}}}
    )
    with pytest.raises(SettingsError, match=r"upcasters\.erp\.02"):
        doubled.settings()
    assert resource.settings().upcasters == {}


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_json_nested_beyond_reach_is_a_value_error_of_the_strict_reader(depth: int) -> None:
    """SPEC 10: bad input is answered with a reason: the strict reader reports nesting it cannot
    follow as a ValueError, so no caller meets a RecursionError."""
    with pytest.raises(ValueError, match="nested too deeply"):
        strict_json.loads("[" * depth + "]" * depth)


# --------------------------------------------------------------------------- the adapter named


def parquet_of(lines: list[str]) -> bytes:
    out = io.BytesIO()
    pl.DataFrame([json.loads(line) for line in lines]).write_parquet(out)
    return out.getvalue()


FIVE = [event(n, f"o{n}") for n in range(1, 6)]


def test_the_adapter_named_wins_over_a_parquet_file_name(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: a name is validated, never trusted: five JSON lines in a file named
    ``*.parquet`` land as five lines with ``--adapter native``, and all five apply."""
    file = home.parent / "events.parquet"
    file.write_text("".join(f"{line}\n" for line in FIVE), encoding="utf-8")
    assert land(home, file, "--adapter", "native", "--batch-id", "B1", day="2026-01-01") == 0
    assert landed(home) == [
        f"{seed000.SOURCE}/2026-01-01/B1.jsonl",
        f"{seed000.SOURCE}/2026-01-01/B1.manifest.json",
    ]
    assert main(["run", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["order_id"] for r in rows) == ["o1", "o2", "o3", "o4", "o5"]


@pytest.mark.parametrize(
    ("name", "content", "adapter", "rule"),
    [
        ("events.parquet", "jsonl", None, "not a Parquet file"),
        ("events.jsonl", "jsonl", "parquet", "not a Parquet file"),
        ("events.parquet", "parquet", "native", "a Parquet file"),
        ("events.jsonl", "parquet", None, "a Parquet file"),
        ("events.parquet", "parquet", "seed001", "a Parquet file"),
        ("events.parquet", "parquet", "debezium", "a Parquet file"),
        ("events.parquet", "parquet", "seed000", "a Parquet file"),
    ],
)
def test_a_file_whose_content_is_not_what_its_adapter_reads_is_a_usage_error(
    home: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, adapter: str | None, rule: str
) -> None:
    """SPEC 10: usage errors exit 2 before anything happens: the adapter named (or, unnamed, the
    one the file's name implies) must match the content; a mismatch lands nothing."""
    file = home.parent / name
    if content == "parquet":
        file.write_bytes(parquet_of(FIVE))
    else:
        file.write_text("".join(f"{line}\n" for line in FIVE), encoding="utf-8")
    extra = ["--adapter", adapter] if adapter else []
    assert land(home, file, *extra, "--batch-id", "B1", day="2026-01-01") == 2
    err = capsys.readouterr().err
    assert "REPLAY_USAGE" in err and name in err and rule in err
    assert landed(home) == []


def test_a_parquet_file_lands_by_its_adapter_whatever_its_name(home: Path) -> None:
    """SPEC 2.2: Parquet is accepted with the native columns; the adapter named decides, so a
    Parquet file named ``*.bin`` lands as Parquet with ``--adapter parquet``."""
    file = home.parent / "events.bin"
    file.write_bytes(parquet_of(FIVE))
    assert land(home, file, "--adapter", "parquet", "--batch-id", "B1", day="2026-01-01") == 0
    assert f"{seed000.SOURCE}/2026-01-01/B1.parquet" in landed(home)


# --------------------------------------------------------------------------- upcaster versions


V2 = {"widen": {"after.quantity": "number"}}


@pytest.mark.parametrize(
    "version", ["02", "٢", "+2", " 2", "2 ", "2.0", "1e1", "0x2", "", "-2", "2" * 13, "²"]
)
def test_an_upcaster_version_that_is_not_a_canonical_integer_is_a_usage_error(
    home: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    """SPEC 10 (v4): an upcaster declaration is checked when the settings are read (exit 2
    naming the key): a version is ASCII digits with no leading zero, so one version has one text."""
    (home / "replay-assets.json").write_text(
        json.dumps({"upcasters": {"erp": {version: V2}}}), encoding="utf-8"
    )
    assert main(["status", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "upcasters.erp." in err and json.dumps(version)[1:-1] in err and "canonical" in err


def test_two_texts_of_one_upcaster_version_are_refused_naming_the_key(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: a duplicated key is never last-wins: ``"2"`` and ``"02"`` would both declare
    version 2, the later silently replacing the first. Refused, exit 2, naming ``"02"``."""
    declared = {"upcasters": {"erp": {"2": V2, "02": {"drop": ["tenant"]}}}}
    (home / "replay-assets.json").write_text(json.dumps(declared), encoding="utf-8")
    assert main(["status", "--home", str(home)]) == 2
    assert "upcasters.erp.02: a version is a whole number" in capsys.readouterr().err


@given(version=st.text(max_size=12) | st.integers(0, 10**12).map(str))
def test_an_upcaster_version_is_accepted_only_as_its_canonical_text(version: str) -> None:
    """SPEC 10 (v4): upcaster declarations are checked when read; a version text is accepted
    exactly when it is the canonical text of one integer other than 1, within range."""
    canonical = version.isascii() and version.isdigit() and str(int(version)) == version
    expected = canonical and int(version) != 1 and int(version) <= MAX_INT
    try:
        declared = parse_upcasters({"erp": {version: {}}})
    except ValueError as refused:
        assert not expected
        message = str(refused)  # names the key, never printing it raw
        assert message.startswith("upcasters.erp.") and message.isascii() and message.isprintable()
    else:
        assert expected
        assert list(declared["erp"]) == [int(version)]


def test_upcaster_sources_are_source_names() -> None:
    """SPEC 10: every name is validated against its pattern: an upcaster's source is a source."""
    with pytest.raises(SettingsError, match="upcasters"):
        settings_from({}, "home", json.dumps({"upcasters": {"../erp": {"2": {}}}}))


# --------------------------------------------------------------------------- widen


CTX = dataclasses.replace(
    ValidationContext(dt.date(2020, 1, 1), dt.date(2030, 1, 1)),
    upcasters=parse_upcasters({"erp": {"2": V2}})["erp"],
)


def v2_line(quantity_text: str) -> str:
    obj = json.loads(event(1))
    obj["schema_version"] = 2
    return json.dumps(obj).replace('"quantity": 1', f'"quantity": {quantity_text}')


def test_widen_rejects_a_number_that_is_not_exactly_an_integer() -> None:
    """README (upcasters): a lossy value is still rejected. ``100.0000000000000001`` is 100
    as a float but not as written: it is not narrowed, and validation rejects it."""
    outcome = parse_event(v2_line("100.0000000000000001"), CTX)
    assert isinstance(outcome, Rejection) and outcome.reason is RejectReason.BAD_VALUE
    kept = parse_event(v2_line("100.0"), CTX)
    assert isinstance(kept, Event) and kept.image is not None and kept.image["quantity"] == 100


NUMBER_TEXT = st.builds(
    lambda whole, fraction, exponent: f"{whole}.{fraction}{exponent}",
    st.integers(0, 10**14).map(str),
    st.text("0123456789", min_size=1, max_size=20),
    st.sampled_from(["", "e0", "e2", "E-1", "e+3", "e-20", "e20"]),
)


@given(text=NUMBER_TEXT)
@example(text="100.0000000000000001")
@example(text="1.99999999999999999999e2")
def test_widen_narrows_a_number_exactly_when_its_text_is_an_integer(text: str) -> None:
    """README (upcasters): ``widen`` takes a value back to an integer when it is exactly one,
    decided on the number's decimal text; anything else is rejected (SPEC 10: never repaired)."""
    exact = Decimal(text)
    integral = exact == exact.to_integral_value() and 0 <= exact <= MAX_INT
    outcome = parse_event(v2_line(text), CTX)
    if integral:
        assert isinstance(outcome, Event) and outcome.image is not None
        assert outcome.image["quantity"] == int(exact)
    else:
        assert isinstance(outcome, Rejection)
