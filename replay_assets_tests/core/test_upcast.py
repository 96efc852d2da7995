"""Schema evolution by declared upcasters (SPEC 2.2, issue 15 item 3): the settings' grammar,
each operation, validation after upcasting, and a property test against the native path."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.config import SettingsError, settings_from
from replay_assets.core.errors import RejectReason, Violation
from replay_assets.core.events import (
    BatchViolation,
    Event,
    Rejection,
    ValidationContext,
    canonical_json,
    parse_event,
)
from replay_assets.core.upcast import Upcaster, UpcastError, Widened, parse_upcasters, upcast
from replay_assets_tests.core.strategies import images
from replay_assets_tests.core.test_events import CTX, customer_obj, delete_obj, order_obj

V2 = {
    "drop": ["tenant", "after.legacy_flag"],
    "rename": {"after.amount_cents": "after.amount_minor", "event_ts": "event_time"},
    "widen": {"after.quantity": "number", "key.line_no": "string", "after.line_no": "string"},
    "add": {"after.status": "active", "after.cost_minor": 0},
}
UPCASTER = parse_upcasters({"erp": {"2": V2}})["erp"][2]
CTX_V2 = dataclasses.replace(CTX, upcasters={2: UPCASTER})


def as_v2(native: dict[str, Any], *, drop_defaults: bool = False) -> dict[str, Any]:
    """What a producer of schema_version 2 writes for a native event: the inverse of ``V2``."""
    out: dict[str, Any] = json.loads(json.dumps(native))
    out["schema_version"] = 2
    out["tenant"] = "t1"
    out["event_ts"] = out.pop("event_time")
    out["key"]["line_no"] = str(out["key"]["line_no"])
    after = out.get("after")
    if isinstance(after, dict):
        after["amount_cents"] = after.pop("amount_minor")
        after["quantity"] = float(after["quantity"])
        after["line_no"] = str(after["line_no"])
        after["legacy_flag"] = True
        if drop_defaults and after["status"] == "active" and after["cost_minor"] == 0:
            del after["status"], after["cost_minor"]
    return out


def test_the_settings_file_declares_upcasters_per_source_and_version() -> None:
    config = json.dumps({"upcasters": {"erp": {"2": V2, "3": {"drop": ["tenant"]}}}})
    declared = settings_from({}, "home", config).upcasters
    assert sorted(declared["erp"]) == [2, 3]
    assert declared["erp"][2] == UPCASTER
    assert declared["erp"][2].widen["after.quantity"] is Widened.NUMBER
    assert declared["erp"][3].sha256 != UPCASTER.sha256
    assert settings_from({}, "home", None).upcasters == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([], "upcasters is not an object"),
        ({"erp": []}, "upcasters.erp is not an object"),
        ({"erp": {"1": {}}}, "upcasters.erp.1: a version is a whole number other than 1"),
        ({"erp": {"v2": {}}}, "upcasters.erp.v2: a version is a whole number"),
        ({"erp": {"2": {"cast": {}}}}, "unknown operation 'cast'"),
        ({"erp": {"2": {"drop": "tenant"}}}, "upcasters.erp.2.drop is not a list"),
        ({"erp": {"2": {"add": []}}}, "upcasters.erp.2.add is not an object"),
        ({"erp": {"2": {"drop": ["schema_version"]}}}, "'schema_version' is not a field path"),
        ({"erp": {"2": {"drop": ["after"]}}}, "'after' is not a field path"),
        ({"erp": {"2": {"drop": ["before.x"]}}}, "'before.x' is not a field path"),
        ({"erp": {"2": {"drop": ["after.a.b"]}}}, "'after.a.b' is not a field path"),
        ({"erp": {"2": {"drop": ["after.a b"]}}}, "'after.a b' is not a field path"),
        ({"erp": {"2": {"rename": {"after.a": "a"}}}}, "moves a field to another object"),
        ({"erp": {"2": {"rename": {"after.a": "after.c", "after.b": "after.c"}}}}, "two fields are renamed"),
        ({"erp": {"2": {"drop": ["after.a"], "rename": {"after.a": "after.b"}}}}, "both dropped and renamed"),
        ({"erp": {"2": {"widen": {"after.quantity": "decimal"}}}}, "names no wider type"),
    ],
)
def test_a_malformed_declaration_is_a_settings_error_naming_it(spec: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_upcasters(spec)
    with pytest.raises(SettingsError, match="upcasters"):
        settings_from({}, "home", json.dumps({"upcasters": spec}))


def test_each_operation_in_order_then_version_one() -> None:
    native = order_obj()
    out = upcast(as_v2(native), UPCASTER)
    assert out == native  # dropped, renamed, narrowed back; nothing was missing to add
    short = as_v2(order_obj(after={**native["after"], "cost_minor": 0}), drop_defaults=True)
    assert "status" not in short["after"]
    assert upcast(short, UPCASTER)["after"] == {**native["after"], "cost_minor": 0}
    present = upcast({**as_v2(native), "after": {**as_v2(native)["after"], "status": "cancelled"}}, UPCASTER)
    assert present["after"]["status"] == "cancelled"  # a default never overwrites a value


def test_widening_takes_back_only_exact_integers() -> None:
    up = Upcaster(2, widen={"after.quantity": Widened.NUMBER, "after.line_no": Widened.STRING})
    image = order_obj()["after"]
    assert upcast({"after": {**image, "quantity": 2.0, "line_no": "1"}}, up)["after"] == image
    lossy = upcast({"after": {**image, "quantity": 2.5, "line_no": "1.0"}}, up)["after"]
    assert (lossy["quantity"], lossy["line_no"]) == (2.5, "1.0")  # left for validation to reject


def test_a_delete_gets_no_image_fields() -> None:
    out = upcast({**as_v2(delete_obj()), "after": None}, UPCASTER)
    assert out["after"] is None
    assert "after" not in upcast({k: v for k, v in as_v2(delete_obj()).items() if k != "after"}, UPCASTER)


def test_a_field_present_under_both_names_cannot_be_upcast() -> None:
    both = as_v2(order_obj())
    both["after"]["amount_minor"] = 5
    with pytest.raises(
        UpcastError, match=r"both 'after\.amount_cents' and its new name 'after\.amount_minor'"
    ):
        upcast(both, UPCASTER)
    outcome = parse_event(canonical_json(both), CTX_V2)
    assert isinstance(outcome, Rejection)
    assert outcome.reason is RejectReason.UPCAST_FAILED and outcome.event_id == "e1"


def test_a_declared_version_validates_after_upcasting() -> None:
    native = parse_event(canonical_json(order_obj()), CTX)
    assert isinstance(native, Event)
    upcast_event = parse_event(canonical_json(as_v2(order_obj())), CTX_V2)
    assert upcast_event == dataclasses.replace(native, schema_version=2)
    # every rule still applies to the result: a lossy widening is rejected with the field's reason
    lossy = as_v2(order_obj())
    lossy["after"]["quantity"] = 2.5
    rejected = parse_event(canonical_json(lossy), CTX_V2)
    assert isinstance(rejected, Rejection) and rejected.reason is RejectReason.BAD_VALUE
    unknown = {**as_v2(order_obj()), "region": "eu"}  # a field the upcaster does not drop
    rejected = parse_event(canonical_json(unknown), CTX_V2)
    assert isinstance(rejected, Rejection) and rejected.reason is RejectReason.UNKNOWN_FIELD


@pytest.mark.parametrize("ctx", [CTX, dataclasses.replace(CTX, upcasters={3: UPCASTER})])
def test_an_undeclared_version_still_blocks_its_batch(ctx: ValidationContext) -> None:
    outcome = parse_event(canonical_json(as_v2(order_obj())), ctx)
    assert isinstance(outcome, BatchViolation)
    assert outcome.rule is Violation.UNSUPPORTED_SCHEMA_VERSION


def test_a_customer_event_upcasts_too() -> None:
    native = customer_obj()
    v2 = {**native, "schema_version": 2, "tenant": "t1", "event_ts": native["event_time"]}
    del v2["event_time"]
    outcome = parse_event(canonical_json(v2), CTX_V2)
    assert isinstance(outcome, Event) and outcome.schema_version == 2
    assert outcome.content_sha256 == parse_event(canonical_json(native), CTX).content_sha256  # type: ignore[union-attr]


@settings(max_examples=80, deadline=None, database=None)
@given(
    image=images("O1", 1),
    seq=st.integers(1, 10**6),
    drop_defaults=st.booleans(),
)
def test_upcasting_a_v2_rendering_equals_the_native_event(
    image: dict[str, Any] | None, seq: int, drop_defaults: bool
) -> None:
    """Any native order event written by the v2 producer parses, upcast, to the same event —
    same key, version, image and content hash — with only the delivered version recorded."""
    window = ValidationContext(dt.date(2020, 1, 1), dt.date(2030, 1, 1))
    native = order_obj(
        source_seq=seq,
        event_id=f"e{seq}",
        key={"order_id": "O1", "line_no": 1},
        after=image,
        op="upsert" if image else "delete",
    )
    if image is None:
        del native["after"]
    want = parse_event(canonical_json(native), window)
    got = parse_event(
        canonical_json(as_v2(native, drop_defaults=drop_defaults)),
        dataclasses.replace(window, upcasters={2: UPCASTER}),
    )
    assert isinstance(want, Event)
    assert got == dataclasses.replace(want, schema_version=2)
