"""A late batch that conflicts with a later load date (SPEC 10, "Late delivery on a sealed load
date"): a batch landed late on D reuses, with other content, an event id that D+1 (already
applied) delivered. Re-applying the chain D..latest blocks, and the blame goes to the late batch
(delivered later, on the earlier load date), never to the later date's healthy batch. The operator
has two ways out, both driven through the command line: skip the late batch (the result equals
never having received it, and later dates proceed), or re-deliver a corrected batch that
supersedes it and backfill again (the result equals the corrected batch on time).

The blocked home is built once through the documented late-delivery path (a real Dagster backfill
in the backfill lane) and copied for each way out.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replay_assets.core.errors import ErrorCode, ReplayError
from replay_assets.core.status import DateStatus
from replay_assets.entrypoints.cli import main
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.resolve import resolve
from replay_assets_tests.core.strategies import deliveries, histories
from replay_assets_tests.helpers import drive, settings_for
from replay_assets_tests.storage import test_bad_input as bad_input
from replay_assets_tests.storage import test_late_delivery as late_delivery
from replay_assets_tests.storage import test_storage_equals_reference as reference
from replay_assets_tests.storage.test_bad_input import D1, D2, D3, NOW, event, make_pipeline
from replay_assets_tests.storage.test_late_delivery import _everything

ON_TIME = {
    D1: ("b1", [event(1, "o1"), event(2, "o2")]),
    D2: ("b2", [event(3, "o1", version=2, amount_minor=200)]),
}
LATER = (D3, "b3", [event(4, "o4")])
# event id e3 is D2's; the late batch for D1 sends it again with another order and content
LATE = [event(9, "o3", event_id="e3")]
CORRECTED = [event(9, "o3", event_id="e9")]


def _backfill(home: Path, first: str, last: str) -> int:
    args = ["--asset", "current_orders", "--from", first, "--to", last, "--note", "late batch for D1"]
    return main(["backfill", *args, "--wait", "--home", str(home)])


def _skip(home: Path, batch_id: str) -> int:
    return main(["resolve", "--batch-id", batch_id, "--action", "skip", "--note", "why", "--home", str(home)])


def _all_applied(home: Path) -> bool:
    return {day: s for day, (s, _) in _statuses(home).items()} == dict.fromkeys(
        (D1, D2, D3), DateStatus.APPLIED
    )


def _statuses(home: Path) -> dict[str, tuple[DateStatus, str]]:
    return {p.load_date: (p.status, p.reason) for p in decide(make_pipeline(home)).plans}


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """D1 and D2 applied on time, then a late batch for D1 through the backfill: the chain is
    blocked by the late batch's reuse of D2's event id; D3 arrives after and waits."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REPLAY_ASSETS_NOW", NOW)
        env.delenv("DAGSTER_HOME", raising=False)
        p = make_pipeline(tmp_path_factory.mktemp("late-conflict") / "home")
        for day, (batch_id, lines) in ON_TIME.items():
            bad_input.deliver(p, day, batch_id, lines)
        drive(p)
        bad_input.deliver(p, D1, "late", LATE, ready_at=f"{D1}T23:00:00Z")
        assert _backfill(p.settings.home, D1, D2) == 1  # the chain is blocked: nothing of it applies
        bad_input.deliver(p, *LATER)
        yield p.settings.home


@pytest.fixture
def home(blocked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    copy = tmp_path / "home"
    shutil.copytree(blocked, copy, ignore=shutil.ignore_patterns("dagster"))  # a fresh instance
    return copy


def _never_late(root: Path, late: list[str] | None) -> Pipeline:
    """The same deliveries with the late batch on time (or never delivered, for None)."""
    p = make_pipeline(root)
    for day, (batch_id, lines) in ON_TIME.items():
        bad_input.deliver(p, day, batch_id, lines)
    if late is not None:
        bad_input.deliver(p, D1, "late-fixed", late, ready_at=f"{D1}T23:30:00Z")
    bad_input.deliver(p, *LATER)
    drive(p)
    return p


def test_status_blames_the_late_batch_and_names_the_way_out(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10: the late batch (delivered later, on the earlier load date) is what blocks; the
    later date's healthy batch stays certified and is never named as the cause."""
    plans = _statuses(home)
    status, reason = plans[D1]
    assert status is DateStatus.BLOCKED
    assert "batch late " in reason and "batch b2" not in reason
    assert "EVENT_ID_CONFLICT" in reason and f"load date {D2}" in reason
    assert "resolve --batch-id late --action skip" in reason
    assert plans[D2][0] is DateStatus.APPLIED
    assert plans[D3][0] is DateStatus.DELAYED  # every later date waits behind D1
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(f"current_orders    {D1}"))
    assert "BLOCKED" in line and "batch late " in line


def test_skipping_the_late_batch_equals_never_receiving_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 and ``resolve``: the healthy batches cannot be skipped (they block nothing); the late
    batch can, and then later dates proceed with the result of never having received it."""
    for healthy in ("b1", "b2"):
        assert _skip(home, healthy) == 2
        assert "does not block" in capsys.readouterr().err
    assert _skip(home, "late") == 0
    assert main(["run", "--home", str(home)]) == 0
    assert _all_applied(home)
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 0
    assert "BLOCKED" not in capsys.readouterr().out
    never = _never_late(tmp_path / "never", None)
    assert _everything(make_pipeline(home), [D1, D2, D3]) == _everything(never, [D1, D2, D3])


def test_a_corrected_batch_that_supersedes_the_late_one_is_applied_by_the_backfill(
    home: Path, tmp_path: Path
) -> None:
    """SPEC 10: a re-delivery that supersedes the late batch makes D1 a late delivery again; the
    backfill re-applies the chain and the result equals the corrected batch delivered on time."""
    p = make_pipeline(home)
    bad_input.deliver(p, D1, "late-fixed", CORRECTED, ready_at=f"{D1}T23:30:00Z", supersedes=["late"])
    assert _statuses(home)[D1][0] is DateStatus.LATE_DELIVERY
    assert _backfill(home, D1, D2) == 0
    assert main(["run", "--home", str(home)]) == 0
    assert _all_applied(home)
    on_time = _never_late(tmp_path / "on-time", CORRECTED)
    assert _everything(make_pipeline(home), [D1, D2, D3]) == _everything(on_time, [D1, D2, D3])


# --------------------------------------------------------------------------- any history


def _conflicting(line: str) -> str:
    """The event of ``line`` under the same event id with other content: another order."""
    body = json.loads(line)
    body["source_seq"] = 10_000  # no other event has it: the conflict is the event id alone
    for part in ("key", "after"):
        if body.get(part):
            body[part]["order_id"] = "late-o"
    return json.dumps(body)


@settings(
    max_examples=4,  # two homes and a chain each; CI draws new ones every run (suite budget)
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_any_late_conflict_is_blamed_on_the_late_batch_and_skipping_it_equals_never_receiving_it(
    data: st.DataObject,
) -> None:
    """SPEC 10 over random CDC streams: a late batch on any sealed date that reuses an event id of
    any later applied date blocks its own date, names itself (never a later date's batch), can be
    skipped while the later date's batch cannot, and skipping it equals never receiving it."""
    days = data.draw(deliveries(data.draw(histories(), label="history")), label="days")
    assume(len(days) >= 2)
    dates = reference.load_dates(len(days))
    root = Path(tempfile.mkdtemp(prefix="replay-assets-late-conflict-"))
    try:
        never = Pipeline(settings_for(root / "never", reference.NOW))
        late_delivery._deliver(never, days)
        drive(never)
        sealed = data.draw(st.integers(0, len(days) - 2), label="sealed date")
        registered = bad_input.rows(
            never,
            "SELECT event_id, load_date FROM event_registry WHERE load_date > ? ORDER BY ALL",
            [dates[sealed]],
        )
        assume(registered)
        event_id, later = data.draw(st.sampled_from(registered), label="reused event")
        line = next(x for x in days[dates.index(later)] if json.loads(x)["event_id"] == event_id)

        p = Pipeline(settings_for(root / "late", reference.NOW))
        late_delivery._deliver(p, days)
        drive(p)
        late_delivery._deliver_late(p, dates[sealed], [_conflicting(line)])
        land(p, dates[sealed], sealed_ok=True)
        with pytest.raises(ReplayError) as blocked:
            apply(p, dates[sealed], None, sealed_ok=True)
        assert blocked.value.code is ErrorCode.BATCH_BLOCKED
        plans = {x.load_date: x for x in decide(p).plans}
        assert plans[dates[sealed]].status is DateStatus.BLOCKED
        assert "batch late " in plans[dates[sealed]].reason
        assert not any(f"batch b{n} " in plans[dates[sealed]].reason for n in range(len(days)))
        with pytest.raises(ReplayError) as healthy:
            resolve(p, f"b{dates.index(later)}", "healthy", "test")
        assert healthy.value.code is ErrorCode.USAGE
        resolve(p, "late", "conflicts with a later date", "test")
        drive(p)
        assert all(x.status is DateStatus.APPLIED for x in decide(p).plans)
        assert _everything(p, dates) == _everything(never, dates)
    finally:
        shutil.rmtree(root, ignore_errors=True)
