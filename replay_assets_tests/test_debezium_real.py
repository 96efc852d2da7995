"""Debezium as live connectors publish it (SPEC 2.2's Debezium adapter; SPEC 10, v4: every input
surface, Debezium files included, lands exactly or is refused with a reason).

Each file under ``fixtures/debezium_real`` reproduces one connector and version in its own
settings (the values are ours): the envelope's field order and types, ``snapshot`` values, the
position fields, ``ts_us``/``ts_ns`` from 2.x, ``transaction`` null or set, the Decimal and
temporal schemas, tombstones. The order table keeps money as NUMERIC(12,2). Each lands through
the command line, runs and exports exactly the expected state.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from replay_assets.entrypoints.cli import main

NOW = "2026-09-22T12:00:00Z"
LOAD_DATE = "2026-09-22"
REAL = Path(__file__).parent / "fixtures" / "debezium_real"
COMMON = {
    "order_id": "id",
    "store_id": "store",
    "customer_id": "customer",
    "product_id": "product",
    "quantity": "qty",
}
SCALED = {"amount_minor": {"column": "amount", "scale": 2}, "cost_minor": {"column": "cost", "scale": 2}}
PARIS = {"business_date": {"column": "created_at", "time_zone": "Europe/Paris"}}
UTC_DAY = {"business_date": "created_at"}
CONNECT_TS = {"business_date": {"column": "created_at", "type": "org.apache.kafka.connect.data.Timestamp"}}


def table(name: str, columns: dict[str, Any]) -> dict[str, Any]:
    declared = {"entity": "order_line", "columns": {**COMMON, **columns}, "defaults": {"line_no": 1}}
    return {"tables": {name: declared}}


# file -> (the source's declared mapping, the expected current orders: id -> status, quantity,
# amount_minor, cost_minor, business_date)
CASES: dict[str, tuple[dict[str, Any], dict[str, tuple[Any, ...]]]] = {
    # issue 45's case: the connector's defaults, columns named as the README does (no options):
    # the scale comes from the schema, the day is the instant's in UTC
    "postgres_2.7_wrapped_precise.jsonl": (
        table("public.orders", {"amount_minor": "amount", "cost_minor": "cost", **UTC_DAY}),
        {
            "5001": ("cancelled", 1, 1200, 450, "2026-09-20"),  # created 2026-09-20T22:30Z
            "5002": ("deleted", None, None, None, None),
            "5003": ("active", 1, 5, 1, "2026-09-21"),
            "5004": ("active", 3, 9990, 4200, "2026-09-21"),
        },
    ),
    "postgres_1.9_wrapped_precise.jsonl": (
        table("public.orders", {**SCALED, **UTC_DAY}),
        {
            "6001": ("deleted", None, None, None, None),
            "6002": ("active", 2, 750, 310, "2026-09-22"),
            "6003": ("active", 4, 99, 10, "2026-09-22"),
        },
    ),
    "postgres_3.0_bare_string.jsonl": (
        table(
            "public.orders",
            {**SCALED, "business_date": {**CONNECT_TS["business_date"], **PARIS["business_date"]}},
        ),
        {
            "7001": ("active", 2, 14999, 8000, "2026-09-22"),
            "7002": ("active", 1, 330, 100, "2026-09-22"),
            "7003": ("deleted", None, None, None, None),
        },
    ),
    "mysql_1.9_wrapped_precise.jsonl": (
        table("shop.orders", {"amount_minor": "amount", "cost_minor": "cost", **UTC_DAY}),
        {
            "8001": ("active", 1, 1899, 900, "2026-09-22"),
            "8002": ("deleted", None, None, None, None),
            "8003": ("active", 2, 6410, 3000, "2026-09-22"),
        },
    ),
    "mysql_2.7_wrapped_double.jsonl": (
        table("shop.orders", {**SCALED, **PARIS}),
        {
            "9001": ("active", 1, 1020, 505, "2026-09-21"),
            "9002": ("active", 1, 1234567890, 200, "2026-09-21"),  # Java writes it 1.23456789E7
            "9003": ("deleted", None, None, None, None),
            "9004": ("active", 5, 220, 110, "2026-09-21"),
        },
    ),
    "mysql_3.0_bare_precise.jsonl": (
        table(
            "shop.orders",
            {
                "amount_minor": {
                    "column": "amount",
                    "scale": 2,
                    "type": "org.apache.kafka.connect.data.Decimal",
                },
                "cost_minor": {"column": "cost", "scale": 2, "type": "org.apache.kafka.connect.data.Decimal"},
                **CONNECT_TS,
            },
        ),
        {
            "9101": ("active", 1, 999999999999, 2000, "2026-09-22"),  # NUMERIC(12,2)'s largest value
            "9102": ("deleted", None, None, None, None),
        },
    ),
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPLAY_ASSETS_NOW", NOW)
    for name in ("REPLAY_ASSETS_HOME", "DAGSTER_HOME", "REPLAY_ASSETS_FAIL_POINT", "REPLAY_ASSETS_FAIL_ONCE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    return home


def configure(home: Path, source: str, mapping: dict[str, Any]) -> None:
    config = {"business_date_start": "2026-01-01", "debezium": {source: mapping}}
    (home / "replay-assets.json").write_text(json.dumps(config), encoding="utf-8")


def land(home: Path, path: Path, source: str = "shop") -> int:
    args = ["land", str(path), "--source", source, "--load-date", LOAD_DATE, "--adapter", "debezium"]
    return main([*args, "--home", str(home)])


def current_orders(home: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[Any, ...]]:
    capsys.readouterr()
    assert main(["export", "current_orders", "--home", str(home), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    fields = ("status", "quantity", "amount_minor", "cost_minor", "business_date")
    return {r["order_id"]: tuple(r[f] for f in fields) for r in rows}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_connector_in_its_own_settings_lands_and_applies_exactly(
    name: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 2.2 (Debezium adapter) and SPEC 10 (v4): a NUMERIC(12,2) order table as the
    connector publishes it lands with nothing rejected, and the state is exact to the cent."""
    mapping, expected = CASES[name]
    configure(home, "shop", mapping)
    assert land(home, REAL / name) == 0
    said = capsys.readouterr().out
    assert "rejected" not in said and "could not be mapped" not in said, said
    assert "1 Kafka tombstones" in said
    assert main(["run", "--home", str(home)]) == 0
    assert current_orders(home, capsys) == expected


def bare(op: str, amount: Any, pos: int, created: Any = 20717) -> str:
    """A bare MySQL change of order 1 (``decimal.handling.mode`` as the amount's type says)."""
    after = {
        "id": 1,
        "store": "s1",
        "customer": 7,
        "product": "p1",
        "qty": 1,
        "amount": amount,
        "cost": "0.00",
    }
    after |= {"status": "active"}
    after["created_at"] = created
    source = {"version": "2.7.3.Final", "connector": "mysql", "name": "my", "ts_ms": 1790000000000 + pos}
    source |= {
        "snapshot": "false",
        "db": "shop",
        "table": "orders",
        "server_id": 1,
        "file": "bin.000001",
        "pos": pos,
    }
    return json.dumps(
        {"before": None, "after": after, "source": source, "op": op, "ts_ms": 1790000000000 + pos}
    )


def test_land_says_how_many_records_will_be_rejected_and_why(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 10 (v4): a value the contract cannot take exactly is rejected with a reason naming
    the field and the column (never rounded, never its value), kept, and ``land`` says so by
    reason before ``run``."""
    configure(home, "shop", table("shop.orders", {**SCALED, "business_date": "created_at"}))
    lines = [
        bare("c", "10.99", 100),  # lands: 1099
        bare("u", "10.999", 200),  # a third fractional digit
        bare("u", "-1.00", 300),  # a refund: the contract's amounts are 0..1e12
        bare("u", "12.00", 400, created=30000),  # 2052: after today plus the tolerance
    ]
    path = tmp_path / "orders.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    assert land(home, path) == 0
    said = capsys.readouterr().out
    assert "3 of 4 events will be rejected when the load date is applied:" in said, said
    assert "BUSINESS_DATE_OUT_OF_RANGE: 1 (first: line 4: " in said
    assert "amount_minor (column 'amount') has more fractional digits than its scale 2" in said
    assert "10.999" not in said and "-1.00" not in said  # reasons never carry row values
    assert main(["run", "--home", str(home)]) == 0
    assert current_orders(home, capsys) == {"1": ("active", 1, 1099, 0, "2026-09-21")}
    assert main(["export", "source_records", "--home", str(home), "--format", "jsonl"]) == 0
    reasons = [json.loads(line)["reason"] for line in capsys.readouterr().out.splitlines()]
    assert reasons == [
        None,
        "amount_minor (column 'amount') has more fractional digits than its scale 2: never rounded",
        "amount_minor (column 'amount') is negative: the contract's amounts are 0..1e12",
        None,
    ]


def test_a_precise_decimal_without_its_schema_needs_its_declared_scale(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SPEC 2.2: base64 bytes carry no scale of their own; a bare message's column declares it,
    and without the declaration the record is refused with the reason, never guessed."""
    declared = {"column": "amount", "type": "org.apache.kafka.connect.data.Decimal"}
    configure(
        home,
        "shop",
        table("shop.orders", {"amount_minor": declared, "cost_minor": {"column": "cost", "scale": 2}}),
    )
    path = tmp_path / "orders.jsonl"
    path.write_text(
        bare("c", base64.b64encode((1099).to_bytes(2, "big")).decode(), 100) + "\n", encoding="utf-8"
    )
    assert land(home, path) == 0
    said = capsys.readouterr().out
    assert "amount_minor (column 'amount') is base64 decimal bytes: declare its scale" in said, said
