"""The two partition definitions, never confused: load dates and business dates."""

from __future__ import annotations

import dagster as dg

from replay_assets.core.config import Settings


def load_date_partitions(settings: Settings) -> dg.DailyPartitionsDefinition:
    """One partition per load date, today included (``end_offset=1``)."""
    return dg.DailyPartitionsDefinition(start_date=settings.load_date_start, end_offset=1)


def business_date_partitions(settings: Settings) -> dg.DailyPartitionsDefinition:
    """One partition per business date, up to today plus the future tolerance."""
    return dg.DailyPartitionsDefinition(
        start_date=settings.business_date_start, end_offset=1 + settings.future_tolerance_days
    )
