"""A real PostgreSQL server for the tests: Debian's postgresql package (installer/install.sh installs it), run as
an unprivileged user (`postgres`, else `nobody`) on a temp dir and a loopback port, once per test session; each
test gets a fresh database (`pg_url`). Skipped, with the reason, without the binaries or without root (the server
must not run as root, and only root can start it as another user)."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from freeport import free_port  # a port below the ephemeral range (tests/freeport.py)

SUPERUSER = "sentinel_test"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    raise RuntimeError("no unprivileged user to run PostgreSQL as")




class Server:
    def __init__(self, bin_dir: Path):
        self.bin, self.user = bin_dir, _user()
        self.dir = Path(tempfile.mkdtemp(prefix="sx-pg-", dir="/tmp"))
        os.chmod(self.dir, 0o700)
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.port = free_port()

    def _as_user(self, *argv: str) -> None:
        proc = subprocess.run(["runuser", "-u", self.user.pw_name, "--", *argv], capture_output=True, text=True,
                              timeout=600, cwd="/")  # initdb on busy, niced cores: minutes
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {proc.stdout}{proc.stderr}")

    def start(self) -> "Server":
        data = self.dir / "data"
        self._as_user(str(self.bin / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust", "--no-sync",
                      "-E", "UTF8")
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._as_user(str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.dir / "log"), "-o", options,
                      "-w", "-t", "60", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        import psycopg

        name = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")

    def stop(self) -> None:
        try:
            self._as_user(str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package; installer/install.sh installs it)")
    if os.geteuid() != 0:
        pytest.skip("starting PostgreSQL as an unprivileged user needs root (CI runs as root)")
    server = Server(bin_dir).start()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty database on the session's server; dropped after the test."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url)
