"""An operation's identity is the same whatever time zone the DuckDB session renders instants in:
the queued groups' instants are rendered as UTC text by the shared rule, never by the session's
cast (which follows the machine's zone)."""

from __future__ import annotations

from pathlib import Path

from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.journal.identities import publish_operation
from replay_assets.storage.publish.recording import pending_groups
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.land import land
from replay_assets_tests.defs.test_sensors_native import HISTORY, NOW, deliver
from replay_assets_tests.helpers import settings_for


def test_a_publish_identity_does_not_follow_the_sessions_time_zone(tmp_path: Path) -> None:
    p = Pipeline(settings_for(tmp_path, NOW))
    deliver(p, HISTORY[0], "B0", 10)
    land(p, HISTORY[0])
    apply(p, HISTORY[0], None)  # applied: its business date is queued, not yet published
    with p.warehouse.connect() as con:
        sql = DuckDBSql(con)
        groups = pending_groups(sql)
        dates = sorted({g[0] for g in groups})
        in_utc = publish_operation(sql, dates)
        con.execute("SET TimeZone = 'Asia/Kolkata'")
        assert con.execute("SELECT CAST(TIMESTAMPTZ '2026-01-01 00:00:00+00' AS VARCHAR)").fetchall() == [
            ("2026-01-01 05:30:00+05:30",)
        ]  # the session's own rendering moved
        assert groups and pending_groups(sql) == groups
        assert publish_operation(sql, dates) == in_utc
        assert groups[0][3].endswith("+00")
