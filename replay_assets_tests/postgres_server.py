"""A real PostgreSQL server for the tests, started by the tests themselves: Debian's binaries
(``postgresql-15``, which ``.ci/run`` installs when missing), a fresh cluster in a temporary
folder, listening on a free loopback port until the test session ends. As root, the cluster
belongs to and runs as the ``postgres`` user: PostgreSQL refuses to run as root.

Durability settings are the server's test ones (``fsync=off``): what the tests kill is
replay-assets' process, never the database server."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
from psycopg2 import sql

from replay_assets_tests.ports import free_port

DEBIAN_BINARIES = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"


def binaries() -> Path | None:
    """The newest of Debian's PostgreSQL ``bin`` folders, or None when the package is missing."""
    found = [p.parent for p in DEBIAN_BINARIES.glob("*/bin/pg_ctl") if p.parent.parent.name.isdigit()]
    return max(found, key=lambda p: int(p.parent.name)) if found else None


@dataclass(frozen=True)
class Server:
    port: int
    bin_dir: Path

    def url(self, database: str) -> str:
        """SQLAlchemy's URL (``DAGSTER_PG_URL``): the driver named, since SQLAlchemy 2.1 reads a
        plain ``postgresql://`` as psycopg 3, and dagster-postgres brings psycopg2."""
        return f"postgresql+psycopg2://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _dsn(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _admin(self) -> Any:
        con = psycopg2.connect(self._dsn("postgres"))
        con.autocommit = True  # CREATE DATABASE runs outside a transaction
        return con

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new empty database (or a copy of ``template``, which must have no connection);
        returns its URL."""
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        con = self._admin()
        try:
            with con.cursor() as cur:
                cur.execute(statement)
        finally:
            con.close()
        return self.url(name)

    def dump(self, database: str) -> str:
        """Everything ``database`` holds, as ``pg_dump`` writes it (schema and rows)."""
        done = subprocess.run(
            [str(self.bin_dir / "pg_dump"), "--no-owner", self._dsn(database)],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def query(self, database: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        con = psycopg2.connect(self._dsn(database))
        try:
            with con.cursor() as cur:
                cur.execute(statement, params)
                return list(cur.fetchall())
        finally:
            con.close()


@contextmanager
def running(bin_dir: Path) -> Iterator[Server]:
    """initdb, then ``pg_ctl start`` on a free port (waiting until it accepts connections); stop
    and delete the cluster after."""
    as_root = os.geteuid() == 0
    account = pwd.getpwnam(SUPERUSER) if as_root else None
    folder = Path(tempfile.mkdtemp(prefix="replay-assets-pg-"))
    data = folder / "data"
    if account is not None:
        os.chown(folder, account.pw_uid, account.pw_gid)

    def run(*cmd: str) -> None:
        user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []} if account else {}
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=folder, **user)  # type: ignore[call-overload]
        if done.returncode != 0:
            tail = done.stderr.strip()[-2000:]
            raise RuntimeError(f"{Path(cmd[0]).name} failed ({done.returncode}): {tail}")

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-sync")
        port = _start(run, bin_dir, folder)
        try:
            yield Server(port, bin_dir)
        finally:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _start(run: Callable[..., None], bin_dir: Path, folder: Path) -> int:
    """``pg_ctl start`` on a free port, chosen just before; another port when something else took
    it in between (the server log says it could not bind). Returns the port."""
    for _ in range(5):
        port = free_port()
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        log = folder / "server.log"
        try:
            run(
                str(bin_dir / "pg_ctl"),
                "-D",
                str(folder / "data"),
                "-o",
                options,
                "-l",
                str(log),
                "-w",
                "start",
            )
            return port
        except RuntimeError:
            if "could not bind" not in log.read_text(encoding="utf-8", errors="replace"):
                raise
    raise RuntimeError("no free port for PostgreSQL after 5 tries")
