"""What is published, on Delta: the publish port (the identity of a publishing and the groups
it releases, publishing by the one procedure of ``publish/procedure.py``) and the published copy.

The published copy on this engine is a Delta table per consumer table under
``<warehouse>/published/`` (``current_orders`` and ``current_customers`` as of the certified
pointer, ``daily_aggregates``, ``publications``, ``reconciliation``, ``partition_status``), each
rewritten in one Delta commit when a table it is read from moved since it was last written. A reader of the
warehouse never waits on a writer here (it reads the newest fence), so the copy is for consumers
that read Delta directly, not a stand-in for a busy warehouse (docs/deploy.md)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from replay_assets.storage.capabilities import shared
from replay_assets.storage.home.home_files import read_own_file, write_own_file
from replay_assets.storage.journal.written_once import JournalReading
from replay_assets.storage.publish import procedure
from replay_assets.storage.rules.published import PUBLISHED
from replay_assets.storage.spark.publish import SparkPublishSteps
from replay_assets.storage.spark.reports import export_frame
from replay_assets.storage.spark.unit import On, SparkSql

_EXPORTED = "published-spark.json"  # under the home: the versions the copy was last written from
# the warehouse tables each table of the published copy is read from (``export_frame``)
_SOURCES = {
    "current_orders": ("order_history", "pointers"),
    "current_customers": ("customer_history", "pointers"),
    "daily_aggregates": ("publications", "aggregate_versions"),
    "publications": ("publications",),
    "reconciliation": ("reconciliation",),
    "partition_status": ("partition_status",),
}


class PublishReading(On, shared.PublishReads):
    pass


class PublishWriting(PublishReading):
    record_failed_candidate = shared.PublicationWrites.record_failed_candidate

    def publish_aggregates(
        self, home: Path, *, dates: list[str], run_id: str | None, now: dt.datetime
    ) -> list[procedure.Published]:
        return procedure.publish_aggregates(
            SparkPublishSteps(self.u), home, dates=dates, run_id=run_id, now=now
        )

    def refresh_published_copy(self, home: Path) -> list[str]:
        """Rewrite each consumer table under ``<warehouse>/published/`` whose sources moved since
        it was last written (idempotent): a publication rewrites the aggregates, not the current
        state it did not change. Refuses while an operator holds an operation."""
        JournalReading(SparkSql(self.u)).require_no_hold()
        found = read_own_file(home, _EXPORTED)
        held = json.loads(found) if found is not None else {}
        if held.get("warehouse") != self.u.tables.root:
            held = {}
        fences = {
            name: [self.u.snapshot.versions.get(t) for t in _SOURCES[name]] for name in sorted(PUBLISHED)
        }
        written = []
        for name, fence in fences.items():
            if held.get("tables", {}).get(name) == fence:
                continue
            export_frame(self.u, name).write.format("delta").mode("overwrite").option(
                "overwriteSchema", "true"
            ).save(f"{self.u.tables.root}/published/{name}")
            written.append(f"published/{name}")
        if written:
            exported = {"warehouse": self.u.tables.root, "tables": fences}
            write_own_file(home, _EXPORTED, json.dumps(exported).encode())
        return written
