"""Inserts in whole row groups: the rows of a file's prepared Parquet files go into a table in
multiples of DuckDB's row group, and only the file's last insert may leave a partial one.

DuckDB writes the rows of a large insert as row groups of their own, the last one partial; a
checkpoint then merges partial row groups by rewriting them with their neighbours. Measured on
2M staged rows landed in inserts of 256k rows (2 vCPU): the inserts took 6.1-6.2 s and the
checkpoint 2.3 s; in multiples of a row group, 3.7-4.2 s and 0.01 s (design.md, "Landing in
whole row groups")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# DuckDB's rows per row group (its storage default, which the warehouse keeps)
ROW_GROUP_ROWS = 122_880


@dataclass(frozen=True)
class Take:
    """One insert's rows: ``rows`` rows of ``files`` read in order, after the first ``offset``."""

    files: list[str]
    rows: int
    offset: int


@dataclass
class Queue:
    """One table's Parquet files waiting to be inserted, in order, with their row counts; the
    first ``offset`` rows of the first file are inserted already."""

    files: list[tuple[str, int]] = field(default_factory=list)
    offset: int = 0

    def take(self, added: Iterable[tuple[str, int]], *, last: bool) -> Take | None:
        """Queue ``added`` and return the next insert: every whole row group waiting, or with
        ``last`` every row waiting; None when there is none to insert."""
        self.files.extend(f for f in added if f[1])  # a file of no rows has nothing to read
        waiting = sum(rows for _name, rows in self.files) - self.offset
        rows = waiting if last else waiting - waiting % ROW_GROUP_ROWS
        if rows == 0:
            if last:
                self.files, self.offset = [], 0
            return None
        used, covered = self.offset + rows, 0
        needed: list[str] = []
        for name, count in self.files:
            if covered >= used:
                break
            needed.append(name)
            covered += count
        taken = Take(needed, rows, self.offset)
        while self.files and used >= self.files[0][1]:
            used -= self.files.pop(0)[1]
        self.offset = used
        return taken
