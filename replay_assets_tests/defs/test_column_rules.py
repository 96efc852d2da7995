"""The certified tables' column rules: one declaration behind both the gate's pandera schemas and
the columns the Dagster UI shows, and definitions that do not import pandera to show them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay_assets.core import schemas
from replay_assets.defs.evidence import column_schema


@pytest.mark.parametrize("table", sorted(schemas.RULES))
def test_the_ui_columns_are_the_pandera_schemas_columns(table: str) -> None:
    pandera = schemas.pandera_schema(table)
    shown = column_schema(schemas.RULES[table])
    assert pandera.name == table and pandera.strict is False
    assert [c.name for c in shown.columns] == list(pandera.columns)
    for column in shown.columns:
        validated = pandera.columns[column.name]
        assert column.type == str(validated.dtype)
        assert column.constraints.nullable == validated.nullable
        assert column.constraints.other == [str(check) for check in validated.checks]


def test_the_module_attributes_are_the_rules_schemas() -> None:
    assert schemas.ORDER_STATE is schemas.pandera_schema("current_orders")
    assert schemas.CUSTOMER_STATE is schemas.pandera_schema("current_customers")
    assert schemas.DAILY_AGGREGATES is schemas.pandera_schema("daily_aggregates")
    with pytest.raises(AttributeError):
        _ = schemas.NO_SUCH_SCHEMA


def test_the_pandera_schema_refuses_what_the_ui_says_it_refuses() -> None:
    import pandera.errors
    import polars as pl

    bad = pl.DataFrame(
        {"customer_id": ["c1"], "name": ["n"], "segment": ["s"], "status": ["gone"], "version": [1]}
    )
    with pytest.raises(pandera.errors.SchemaError, match="isin"):
        schemas.CUSTOMER_STATE.validate(bad)


DEFINITIONS = """
import sys
import dagster as dg
from replay_assets.definitions import build_definitions
from replay_assets.entrypoints.environment import settings_from_environment
defs = build_definitions(settings_from_environment(sys.argv[1]))
spec = defs.resolve_assets_def("current_orders").specs_by_key[dg.AssetKey("current_orders")]
print(len(spec.metadata["dagster/column_schema"].columns), "pandera" in sys.modules, file=sys.stderr)
"""


def test_building_the_definitions_does_not_import_pandera(tmp_path: Path) -> None:
    """Pandera (and, with pyspark installed, pyspark's pandas API it pulls in) costs every
    command about a second; only validating a frame needs it."""
    child = subprocess.run(
        [sys.executable, "-c", DEFINITIONS, str(tmp_path)], capture_output=True, text=True, env=os.environ
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stderr.strip().splitlines()[-1] == f"{len(schemas.ORDER_RULE.columns)} False"
