"""What the state's content hash covers: per entity its history table, the hashed columns and the
key, and the number of 64-bit limbs of a row's sha256 that are summed."""

from __future__ import annotations

from replay_assets.storage.rules.tables import CUSTOMER_COLUMNS, ORDER_COLUMNS

# entity -> (history table, hashed columns, key)
ENTITIES = {
    "orders": ("order_history", (*ORDER_COLUMNS, "version"), ("order_id", "line_no")),
    "customers": ("customer_history", (*CUSTOMER_COLUMNS, "version"), ("customer_id",)),
}
LIMBS = 4
