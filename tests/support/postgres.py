"""A real PostgreSQL server for the tests, started by the tests from Debian's `postgresql`.

`PostgresServer` runs `initdb` and `pg_ctl` in a temporary folder, on a free port of
127.0.0.1, with trust authentication for the user `soev`, and stops it afterwards. As
root (CI), it runs the server as the `postgres` user, since PostgreSQL refuses root. When
no server binaries are installed, `available()` says so and the tests that need one skip:
`.ci/run` installs the package.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

USER = "soev"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def available() -> bool:
    return _bin_dir() is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """One PostgreSQL server; `with PostgresServer() as server:` starts and stops it."""

    port: int = field(default_factory=_free_port)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="soev-pg-")))

    def _run(self, *command: str) -> None:
        prefix: list[str] = []
        if os.geteuid() == 0:
            prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=60)

    def __enter__(self) -> PostgresServer:
        bin_dir = _bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian package postgresql)")
        if os.geteuid() == 0:
            postgres = pwd.getpwnam("postgres")
            os.chown(self.folder, postgres.pw_uid, postgres.pw_gid)
        data = self.folder / "data"
        self._run(
            str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8"
        )
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(self.folder / "log"),
            "-w",
            "start",
        )
        self._bin = bin_dir
        return self

    def __exit__(self, *exc: object) -> None:
        self._run(
            str(self._bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"
        )
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create database `name` and return its URL."""
        import psycopg2

        connection = psycopg2.connect(self.url("postgres"))
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        connection.close()
        return self.url(name)

    def count(self, database: str, query: str) -> int:
        import psycopg2

        connection = psycopg2.connect(self.url(database))
        with connection.cursor() as cursor:
            cursor.execute(query)
            (value,) = cursor.fetchone()
        connection.close()
        return int(value)
