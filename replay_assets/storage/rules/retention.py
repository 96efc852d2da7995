"""What pruning a load date removes from the evidence tables, on both engines: the work done
before the pruned date was applied, so the journal, attempts and costs stay bounded by the
horizon. Each COMPLETE operation last moved before then goes with its audit rows; the step
attempts and costs of each run whose rows all precede it go whole; a cost without a run goes by
its own time. What stays: every operation that is not COMPLETE (in progress, failed before
commit, in doubt or held by an operator) with its audit trail whatever its age, and every commit
marker (the fence: the proof of what committed, one small row an operation).

Each rule is a statement selecting the removed rows' keys (DuckDB's dialect, rendered for Spark),
the columns a table's row ``t`` matches a selected row by, and a further condition on ``t``; the
rules run in the order given (an audit row's rule reads the operations, so it runs before
theirs)."""

from __future__ import annotations

from dataclasses import dataclass

# The moment the pruned date was applied, and never later than any date inside the horizon was
# (one row per applied date, so the earliest from the pruned date on): evidence recorded before
# it is of work behind the horizon.
_CUTOFF = "cutoff AS (SELECT min(applied_at) AS before FROM load_dates WHERE load_date >= $day)"
_COMPLETE = f"""WITH {_CUTOFF}
SELECT o.operation_id FROM operations o JOIN cutoff c ON o.updated_at < c.before
WHERE o.state = 'COMPLETE'"""


def _runs_before(table: str) -> str:
    return f"""WITH {_CUTOFF}
SELECT r.run_id FROM (SELECT run_id, max(recorded_at) AS newest FROM {table}
                      WHERE run_id IS NOT NULL GROUP BY run_id) r
JOIN cutoff c ON r.newest < c.before"""


_UNNAMED = f"""WITH {_CUTOFF}
SELECT DISTINCT k.recorded_at FROM costs k JOIN cutoff c ON k.recorded_at < c.before
WHERE k.run_id IS NULL"""


@dataclass(frozen=True)
class Pruned:
    """One rule: ``table``'s rows matching a row of ``select`` on ``keys`` (and ``also``, a
    condition on the table's own row ``t``) go."""

    table: str
    select: str
    keys: tuple[str, ...]
    also: str = ""


PRUNED_EVIDENCE = (
    Pruned("operation_audit", _COMPLETE, ("operation_id",)),
    Pruned("operations", _COMPLETE, ("operation_id",)),
    Pruned("step_attempts", _runs_before("step_attempts"), ("run_id",)),
    Pruned("costs", _runs_before("costs"), ("run_id",)),
    Pruned("costs", _UNNAMED, ("recorded_at",), also="t.run_id IS NULL"),
)
