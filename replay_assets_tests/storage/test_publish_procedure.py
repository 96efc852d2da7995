"""The publication is one engine-neutral procedure both adapters run: the module holding it, its
types and the re-verification verdicts loads no engine, so the Spark adapter can hold it without
DuckDB."""

from __future__ import annotations

import subprocess
import sys

from replay_assets.storage.publish.procedure import Published, Verdict, aggregates_verdict, publish_aggregates

_LOADED = (
    "import importlib, sys\n"
    "for name in sys.argv[1:]:\n"
    "    importlib.import_module(name)\n"
    "print(sorted(m for m in ('duckdb', 'pyspark') if m in sys.modules))\n"
)


def test_the_publication_procedure_loads_no_engine() -> None:
    held = {f.__module__ for f in (publish_aggregates, Published, Verdict, aggregates_verdict)}
    found = subprocess.run(
        [sys.executable, "-c", _LOADED, *sorted(held)], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"
