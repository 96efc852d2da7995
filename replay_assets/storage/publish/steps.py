"""The steps of publishing daily aggregates (``procedure.publish_aggregates``), as a port: the
procedure (candidates as of the certified pointer, their gate, publish or keep, release the
queue) is engine-neutral, each engine supplies these steps (DuckDB:
``storage/duckdb_adapter/publish_steps.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import polars as pl

    from replay_assets.core.gate import CheckOutcome


class CandidateSteps(Protocol):
    """What the candidates are computed from: the certified state, the candidate aggregates of
    the dates to publish (computed by the engine, one row per store and date), their
    recomputation and the reconciliation they must agree with."""

    def certified_pointer(self) -> str | None: ...
    def latest_holds_as_of(self, day: str) -> bool: ...
    def recomputed_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame: ...
    def applied_reconciliation(self, as_of: str) -> pl.DataFrame: ...
    def first_applied(self) -> str | None: ...
    def certified_load_dates(self) -> set[str]: ...
    def candidate_aggregates(self, dates: list[str], *, as_of: str, from_latest: bool) -> pl.DataFrame: ...


@dataclass(frozen=True)
class Candidate:
    """A business date's candidate aggregates: their content hash and the gate's outcomes."""

    key: str
    digest: str
    checks: tuple[CheckOutcome, ...]


class PublicationWrites(Protocol):
    """Publishing candidates or keeping a refused one, and releasing the queue they answer: the
    passed candidates of a publishing in one call each (``last_publications``: each partition's
    newest publication, version, content hash, as-of load date; ``record_publications``: the new
    version of each that got one, ``verdicts.publishing`` deciding)."""

    def record_failed_candidate(
        self,
        home: Path,
        *,
        asset: str,
        key: str,
        as_of: str,
        digest: str,
        outcomes: Sequence[CheckOutcome],
        rows: pl.DataFrame,
        run_id: str | None,
        now: dt.datetime,
    ) -> Path: ...
    def last_publications(self, asset: str, keys: list[str]) -> dict[str, tuple[int, str, str]]: ...
    def record_publications(
        self, asset: str, candidates: Sequence[Candidate], *, as_of: str, run_id: str | None, now: dt.datetime
    ) -> dict[str, int | None]: ...
    def insert_aggregate_versions(self, versions: pl.DataFrame) -> None: ...
    def release_queue(self, days: list[str], *, as_of: str, now: dt.datetime, run_id: str | None) -> None: ...


class PublishSteps(Protocol):
    @property
    def candidates(self) -> CandidateSteps: ...
    @property
    def publications(self) -> PublicationWrites: ...
