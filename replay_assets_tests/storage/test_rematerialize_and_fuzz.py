"""Re-materializing an applied load date verifies it; malformed input never changes state
beyond the accepted events."""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.demo.scenarios import seed001
from replay_assets.storage.landing.deliveries import write_delivery
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets_tests.helpers import drive, settings_for


def seeded(home: Path) -> Pipeline:
    pipeline = Pipeline(settings_for(home, seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    seed001.deliver_cdc(pipeline.settings.landing, "B20260921-CDC-A", "2026-09-21", "2026-09-21T08:12:00Z")
    drive(pipeline)
    return pipeline


def test_rematerializing_an_applied_date_is_verified_and_writes_nothing(tmp_path: Path) -> None:
    pipeline = seeded(tmp_path)
    with pipeline.warehouse.connect() as con:
        before = con.execute("SELECT count(*), max(applied_at) FROM load_dates").fetchall()
    for day in ("2026-09-20", "2026-09-21"):  # verified against raw, then the recorded result returns
        assert apply(pipeline, day, None).status == "APPLIED"
    with pipeline.warehouse.connect() as con:
        assert con.execute("SELECT count(*), max(applied_at) FROM load_dates").fetchall() == before


def test_rematerializing_a_date_whose_history_was_tampered_fails_closed(tmp_path: Path) -> None:
    pipeline = seeded(tmp_path)
    with pipeline.warehouse.transaction() as con:
        con.execute("UPDATE order_history SET amount_minor = 1 WHERE load_date = '2026-09-21'")
    with pytest.raises(ReplayError) as err:
        apply(pipeline, "2026-09-21", None)
    assert err.value.code is ErrorCode.HISTORY_DIVERGED


def state_of(pipeline: Pipeline) -> list[tuple]:
    with pipeline.warehouse.connect() as con:
        return con.execute(
            "SELECT * EXCLUDE (load_date) FROM orders_as_of('2026-09-21') ORDER BY order_id, line_no"
        ).fetchall()


@pytest.fixture(scope="module")
def clean_state() -> list[tuple]:
    return state_of(seeded(Path(tempfile.mkdtemp())))


junk = st.one_of(
    st.text(max_size=40),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=8,
    ).map(json.dumps),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(junk, min_size=1, max_size=6), st.data())
def test_malformed_lines_are_rejected_and_change_nothing(
    clean_state: list[tuple], lines: list[str], data: st.DataObject
) -> None:
    pipeline = Pipeline(settings_for(Path(tempfile.mkdtemp()), seed001.NOW))
    seed001.deliver_baseline(pipeline.settings.landing)
    good = seed001.native(seed001.cdc_events())
    mixed = list(good)
    for line in lines:
        mixed.insert(data.draw(st.integers(0, len(mixed))), line.replace("\n", " "))
    write_delivery(
        pipeline.settings.landing, "erp", "2026-09-21", "MIXED", mixed, "2026-09-21T08:12:00Z", (201, 206)
    )
    drive(pipeline)
    assert state_of(pipeline) == clean_state
    with pipeline.warehouse.connect() as con:
        (rejected,) = con.execute("SELECT rejected FROM reconciliation WHERE batch_id = 'MIXED'").fetchall()[
            0
        ]
    assert rejected == sum(1 for line in lines if line.strip())


def test_a_drifted_snapshot_record_is_repaired_by_a_repair_operation(tmp_path: Path) -> None:
    pipeline = seeded(tmp_path)
    with pipeline.warehouse.transaction() as con:  # the stored record drifts (seed 003's corruption)
        con.execute(
            "UPDATE snapshots SET cost_minor = 435, gross_profit_minor = 255 WHERE load_date = '2026-09-20'"
        )
        later = con.execute("""SELECT version, content_sha256 FROM publications
                               WHERE asset = 'current_orders' AND partition_key = '2026-09-21'""").fetchall()
    result = apply(pipeline, "2026-09-20", None, sealed_ok=True)
    assert result.controls is not None and result.controls.as_tuple() == (8, 5, 10, 690, 425, 265)
    with pipeline.warehouse.connect() as con:
        snapshot = con.execute("""SELECT cost_minor, gross_profit_minor FROM snapshots
                                  WHERE load_date = '2026-09-20'""").fetchall()
        versions = con.execute("""SELECT version, reason FROM publications WHERE asset = 'current_orders'
                                  AND partition_key = '2026-09-20' ORDER BY version""").fetchall()
        kinds = con.execute("SELECT kind, state FROM operations WHERE kind LIKE 'repair%'").fetchall()
        assert (
            con.execute("""SELECT version, content_sha256 FROM publications WHERE asset = 'current_orders'
                              AND partition_key = '2026-09-21'""").fetchall()
            == later
        )
    assert snapshot == [(425, 265)]
    assert [v for v, _ in versions] == [1, 2] and versions[1][1].startswith("repaired:")
    assert kinds == [("repair_apply_load_date", "COMPLETE")]
    apply(pipeline, "2026-09-20", None, sealed_ok=True)  # the repaired target matches: nothing new
    with pipeline.warehouse.connect() as con:
        assert con.execute("""SELECT count(*) FROM publications WHERE asset = 'current_orders'
                              AND partition_key = '2026-09-20'""").fetchall() == [(2,)]
