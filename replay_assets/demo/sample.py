"""The sample ``replay-assets ui`` delivers into an empty home: a week of a small shop's orders.

Dated relative to today (the home runs on the real clock), so what the UI shows is recent and a
delivery landed now is fresh. Each load date is one delivery written the way ``replay-assets
land`` writes it (data file, then manifest); the first carries the three business dates before
it, every later one the day before it plus a correction of an earlier order, so each load date
restates more than one business date. The partitions start a few days before the first load
date, so most of them fill. Deterministic: the same day gives the same files.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay_assets.core.config import CONFIG_FILE
from replay_assets.core.events import canonical_json
from replay_assets.storage.home.files import atomic_write
from replay_assets.storage.landing.deliveries import create_delivery

SOURCE = "shop"
LOAD_DATES = 7  # today and the six days before
BASELINE_DAYS = 3  # business dates the first delivery carries (the days before it)
LOAD_DATE_LEAD = 2  # load-date partitions before the first delivery
STORES = ("north", "south", "east")
CUSTOMERS = (
    ("C01", "Ada", "retail"),
    ("C02", "Ben", "retail"),
    ("C03", "Cleo", "wholesale"),
    ("C04", "Dev", "retail"),
    ("C05", "Eli", "wholesale"),
    ("C06", "Fay", "retail"),
)
SENSOR_INTERVAL_SECONDS = 5  # the sample's sensors tick often, so the week is applied in a minute
INCIDENT_INDEX = 3  # the load date whose stored record the sample's incident corrupts
Change = tuple[str, dict[str, Any], dict[str, Any]]  # entity, key, image


@dataclass(frozen=True)
class Sample:
    """What the sample delivered: its load dates (oldest first), the business dates they carry,
    and the load date of its incident."""

    load_dates: tuple[str, ...]
    business_dates: tuple[str, ...]

    @property
    def incident_date(self) -> str:
        return self.load_dates[INCIDENT_INDEX]


def plan_sample(today: dt.date) -> Sample:
    """The sample's dates for ``today``: load dates today-6 .. today; business dates from three
    days before the first load date to the day before the last."""
    first = today - dt.timedelta(days=LOAD_DATES - 1)
    loads = tuple(str(first + dt.timedelta(days=n)) for n in range(LOAD_DATES))
    days = BASELINE_DAYS + LOAD_DATES - 1
    start = first - dt.timedelta(days=BASELINE_DAYS)
    return Sample(loads, tuple(str(start + dt.timedelta(days=n)) for n in range(days)))


def sample_settings(sample: Sample) -> dict[str, Any]:
    """The home's settings file: partitions from a few days before the sample's dates (not
    2020-01-01, which would leave thousands of empty partitions), sensors every few seconds."""
    first = dt.date.fromisoformat(sample.load_dates[0])
    return {
        "load_date_start": str(first - dt.timedelta(days=LOAD_DATE_LEAD)),
        "business_date_start": sample.business_dates[0],
        "sensor_interval_seconds": SENSOR_INTERVAL_SECONDS,
    }


def sample_deliveries(sample: Sample) -> dict[str, list[str]]:
    """Each load date's event lines (native JSON Lines), with one source sequence across them."""
    lines: dict[str, list[str]] = {}
    seq = 0
    shop = random.Random(41)  # a fixed seed: the same files every time, only the dates move
    orders: list[dict[str, Any]] = []
    for index, load_date in enumerate(sample.load_dates):
        events: list[Change] = []
        if index == 0:
            days = sample.business_dates[:BASELINE_DAYS]
            events += [("customer", {"customer_id": c[0]}, _customer(*c)) for c in CUSTOMERS]
        else:
            days = (sample.business_dates[BASELINE_DAYS + index - 1],)
            events.append(_correction(shop, orders))
        for day in days:
            new = [_order_line(shop, day, n) for n in range(shop.randint(3, 5))]
            orders += new
            events += [("order_line", {"order_id": o["order_id"], "line_no": 1}, o) for o in new]
        lines[load_date] = []
        for entity, key, after in events:
            seq += 1
            lines[load_date].append(_event(seq, entity, key, after, day=after.get("business_date", days[0])))
    return lines


def _customer(customer_id: str, name: str, segment: str) -> dict[str, Any]:
    return {"customer_id": customer_id, "name": name, "segment": segment}


def _order_line(shop: random.Random, day: str, n: int) -> dict[str, Any]:
    quantity, price = shop.randint(1, 4), shop.choice((250, 400, 650, 900, 1200))
    return {
        "order_id": f"O{day.replace('-', '')}{n:02d}",
        "line_no": 1,
        "store_id": shop.choice(STORES),
        "customer_id": shop.choice(CUSTOMERS)[0],
        "product_id": f"P{shop.randint(1, 9):02d}",
        "business_date": day,
        "quantity": quantity,
        "amount_minor": quantity * price,
        "cost_minor": quantity * price * 3 // 5,
        "status": "active",
    }


def _correction(shop: random.Random, orders: list[dict[str, Any]]) -> Change:
    """A late change to an earlier order: a cancellation or one more unit (its business date is
    restated again)."""
    order = dict(shop.choice([o for o in orders if o["status"] == "active"]))
    if shop.random() < 0.4:
        order["status"] = "cancelled"
    else:
        price = order["amount_minor"] // order["quantity"]
        order["quantity"] += 1
        order["amount_minor"] = order["quantity"] * price
        order["cost_minor"] = order["quantity"] * price * 3 // 5
    orders[:] = [order if o["order_id"] == order["order_id"] else o for o in orders]
    return "order_line", {"order_id": order["order_id"], "line_no": 1}, order


def _event(seq: int, entity: str, key: dict[str, Any], after: dict[str, Any], day: str) -> str:
    when = f"{day}T{9 + seq % 9:02d}:{seq % 60:02d}:00Z"  # shop hours on the business date
    return canonical_json(
        {
            "event_id": f"{SOURCE}-{seq}",
            "source_seq": seq,
            "schema_version": 1,
            "entity": entity,
            "op": "upsert",
            "key": key,
            "event_time": when,
            "after": after,
        }
    )


def deliver_sample(home: Path, now: dt.datetime) -> Sample:
    """Write the sample into ``home`` (an empty one: the caller checks): the settings file, then
    one delivery per load date, ready ``now`` (the source made the week available at once)."""
    sample = plan_sample(now.date())
    home.mkdir(parents=True, exist_ok=True)
    text = json.dumps(sample_settings(sample), indent=2) + "\n"
    atomic_write(home / CONFIG_FILE, text.encode("utf-8"))
    ready_at = now.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    for load_date, lines in sample_deliveries(sample).items():
        create_delivery(
            home / "landing",
            SOURCE,
            load_date=load_date,
            batch_id=f"SHOP-{load_date.replace('-', '')}",
            lines=lines,
            ready_at=ready_at,
        )
    return sample
