"""``replay-assets demo``, seed 004: the operation journal under a kill, an operator's
hold, two workers and a reused operation id — printing the journal's own evidence.

It drives the use cases directly (no Dagster: the journal is the same either way, and the kill
matrix proves it through ``replay-assets run``); the killed and racing workers are real processes.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from replay_assets.core.config import Settings
from replay_assets.core.errors import ReplayError
from replay_assets.core.journal import intent_digest
from replay_assets.core.manifest import parse_instant
from replay_assets.demo.scenarios import seed001
from replay_assets.demo.seeds import Print
from replay_assets.storage.db.sql import DuckDBSql
from replay_assets.storage.journal import executor as journal
from replay_assets.storage.journal import recovery
from replay_assets.storage.journal.identities import apply_operation
from replay_assets.storage.unit import WarehouseWriter
from replay_assets.usecases.apply import apply
from replay_assets.usecases.context import Pipeline
from replay_assets.usecases.decide import decide
from replay_assets.usecases.land import land
from replay_assets.usecases.recover import refresh_published

KILLED, HELD, RACED = "2026-09-21", "2026-09-22", "2026-09-23"
DAYS = {KILLED: "B20260921-CDC-A", HELD: "B20260922-CDC-B", RACED: "B20260923-CDC-C"}
OPERATOR = "demo"


def seed004_demo(home: Path, out: Print) -> dict[str, Any]:
    p = Pipeline(Settings(home=home, fixed_now=parse_instant(seed001.NOW, "now")))
    seed001.deliver_baseline(p.settings.landing)
    land(p, seed001.BASELINE_DATE)
    apply(p, seed001.BASELINE_DATE, None)
    for day, batch in DAYS.items():
        seed001.deliver_cdc(p.settings.landing, batch, day, f"{day}T08:12:00Z")
    figures = {
        "killed": _killed_then_recovered(p),
        "held": _held_until_the_operator_marks_it(p),
        "raced": _two_workers(p),
        "conflict": _reused_operation_id(p),
    }
    _print(out, figures)
    return figures


def _worker(p: Pipeline, day: str, fail_point: str | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "replay_assets.demo.journal_worker", str(p.settings.home), seed001.NOW, day]
    args += [fail_point] if fail_point else []
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _reported(worker: subprocess.Popen[str]) -> str:
    """The status a worker printed; a worker that failed is an error naming its own."""
    out, err = worker.communicate(timeout=120)
    if worker.returncode != 0:
        raise RuntimeError(f"a journal worker exited with {worker.returncode}: {err.strip()[-2000:]}")
    return str(json.loads(out)["status"])


def _operation(p: Pipeline, day: str) -> str:
    with p.warehouse.connect() as con:
        found = con.execute(
            "SELECT operation_id FROM operations WHERE kind = 'apply_load_date' AND partition_key = ?", [day]
        ).fetchall()
    return str(found[0][0])


def _fences(p: Pipeline, day: str) -> int:
    with p.warehouse.connect() as con:
        found = con.execute(
            """SELECT count(*) FROM commit_markers m JOIN operations o USING (operation_id)
               WHERE o.kind = 'apply_load_date' AND o.partition_key = ?""",
            [day],
        ).fetchall()
    return int(found[0][0])


def _audit(p: Pipeline, op_id: str) -> list[str]:
    """The operation's audit trail, one chain of states per actor in turn."""
    with p.store.read() as unit:
        trail = recovery.inspect(unit, op_id)["audit"]
    chains: list[tuple[str, list[str]]] = []
    for a in trail:
        if not chains or chains[-1][0] != a["actor"]:
            chains.append((str(a["actor"]), []))
        chains[-1][1].append(str(a["to"]))
    return [f"{actor}: {' -> '.join(states)}" for actor, states in chains]


def _recover(p: Pipeline, op_id: str, action: recovery.Action, note: str) -> str:
    try:
        entry = recovery.apply(
            p.store,
            op_id,
            action,
            note=note,
            operator=OPERATOR,
            evidence=lambda: refresh_published(p),
            now=p.now(),
        )
    except ReplayError as refused:
        return f"refused: {refused.code}"
    return str(entry.state)


def _killed_then_recovered(p: Pipeline) -> dict[str, Any]:
    """SIGKILL right after the target transaction committed (the fence is in it): the operator
    inspects, plans and finishes the evidence; the mutation happened once."""
    land(p, KILLED)
    worker = _worker(p, KILLED, "apply_load_date:after_target_commit")
    worker.communicate(timeout=120)
    op_id = _operation(p, KILLED)
    with p.store.read() as unit:
        doubt = recovery.in_doubt(unit)
        plan = recovery.plan(unit, op_id)
    return {
        "exit": worker.returncode,
        "in_doubt": [(d["partition_key"], str(d["state"])) for d in doubt],
        "plan": {"fence": plan.fence, "actions": [str(a) for a in plan.actions], "why": plan.explanation},
        "recovered": _recover(p, op_id, recovery.Action.COMPLETE_EVIDENCE, "killed after the commit"),
        "fences": _fences(p, KILLED),
        "rerun": apply(p, KILLED, None).status.value,
        "audit": _audit(p, op_id),
    }


def _held_until_the_operator_marks_it(p: Pipeline) -> dict[str, Any]:
    """SIGKILL after COMMITTING, before the target transaction: an operator holds it
    (COMMIT_UNKNOWN); nothing runs until the mark that agrees with the fence releases it."""
    land(p, HELD)
    worker = _worker(p, HELD, "apply_load_date:after_committing")
    worker.communicate(timeout=120)
    op_id = _operation(p, HELD)
    held = _recover(p, op_id, recovery.Action.MARK_UNKNOWN, "warehouse restored from a backup: look first")
    try:
        apply(p, HELD, None)
        blocked = "applied"
    except ReplayError as refused:
        blocked = str(refused.code)
    wrong = _recover(p, op_id, recovery.Action.MARK_COMMITTED, "guessing")
    released = _recover(p, op_id, recovery.Action.MARK_NOT_COMMITTED, "no fence: it never committed")
    return {
        "exit": worker.returncode,
        "held": held,
        "run_while_held": blocked,
        "mark_committed": wrong,
        "mark_not_committed": released,
        "after": apply(p, HELD, None).status.value,
        "fences": _fences(p, HELD),
        "audit": _audit(p, op_id),
    }


def _two_workers(p: Pipeline) -> dict[str, Any]:
    """Two processes apply the same load date at once: one mutation, both report its result."""
    land(p, RACED)
    workers = [_worker(p, RACED) for _ in range(2)]
    results = [_reported(w) for w in workers]
    return {"results": results, "fences": _fences(p, RACED), "audit": _audit(p, _operation(p, RACED))}


def _reused_operation_id(p: Pipeline) -> dict[str, Any]:
    """The operation id of an applied date offered with another intent: refused before the
    executor reads or writes anything."""
    plan = next(d for d in decide(p).plans if d.load_date == KILLED)
    with p.warehouse.connect() as con:
        op = apply_operation(DuckDBSql(con), plan)
        before = con.execute("SELECT count(*), max(version) FROM operation_audit").fetchall()
    other = dataclasses.replace(op, intent_digest=intent_digest({"batches": [["erp", "B-OTHER", "0" * 64]]}))
    touched: list[str] = []

    def mutate(unit: WarehouseWriter) -> tuple[dict[str, Any], str | None]:
        touched.append("mutate")
        return {}, None

    def target_now(unit: WarehouseWriter, entry: journal.Entry) -> str | None:
        touched.append("target")
        return None

    try:
        journal.execute(
            p.store,
            other,
            mutate=mutate,
            evidence=lambda: touched.append("evidence"),
            target_now=target_now,
            clock=p.now,
            fail_point=None,
        )
        code = "executed"
    except ReplayError as refused:
        code = str(refused.code)
    with p.warehouse.connect() as con:
        after = con.execute("SELECT count(*), max(version) FROM operation_audit").fetchall()
    return {"code": code, "touched": touched, "journal_unchanged": before == after}


def _print(out: Print, f: dict[str, Any]) -> None:
    k, h, r, c = f["killed"], f["held"], f["raced"], f["conflict"]
    out("seed 004 — the operation journal: kill, hold, two workers, a reused id")
    out(f"  {KILLED}: worker SIGKILLed after the target commit (exit {k['exit']}); in doubt: {k['in_doubt']}")
    out(f"    recovery plan: fence {k['plan']['fence']}, actions {k['plan']['actions']} — {k['plan']['why']}")
    out(f"    recovery apply complete-evidence: {k['recovered']}; fences {k['fences']}")
    out(f"    applying it again returns the recorded result: {k['rerun']}")
    out(f"    audit: {'; '.join(k['audit'])}")
    out(f"  {HELD}: worker SIGKILLed after COMMITTING, before the target (exit {h['exit']})")
    out(
        f"    mark-unknown: {h['held']}; apply while held: {h['run_while_held']}; "
        f"mark-committed: {h['mark_committed']}; mark-not-committed: {h['mark_not_committed']}"
    )
    out(f"    the next apply: {h['after']}; fences {h['fences']}")
    out(f"    audit: {'; '.join(h['audit'])}")
    out(f"  {RACED}: two workers at once returned {r['results']}; fences {r['fences']}")
    out(f"    audit: {'; '.join(r['audit'])}")
    out(
        f"  reused operation id with another intent: {c['code']}; "
        f"the executor touched {c['touched'] or 'nothing'}; journal unchanged {c['journal_unchanged']}"
    )
