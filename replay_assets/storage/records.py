"""Records the warehouse's ports hand over, whatever the engine: an operation of the journal
(its identity and intent) and the entry recorded for it (defined with the journal's rules)."""

from __future__ import annotations

from replay_assets.storage.rules.journal import Entry as Entry
from replay_assets.storage.rules.journal import Operation as Operation
