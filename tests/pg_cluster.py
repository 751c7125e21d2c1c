"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb, pg_ctl, a Unix socket.

The server binaries are looked up on ``PATH``, then under ``/usr/lib/postgresql/*/bin`` (where
Debian's ``postgresql-15`` puts them; ``.ci/run`` installs it where ``initdb`` is missing). The
cluster lives in a temporary folder, listens on no TCP port at all (``listen_addresses = ''``),
only on a Unix socket in that folder, and trusts its one superuser there: nothing outside the
machine can reach it, and no password is made or kept.

PostgreSQL refuses to run as root, so under root (CI, this machine image) ``initdb`` and
``pg_ctl`` run as the unprivileged ``postgres`` account Debian's package creates (else
``nobody``) through ``runuser``, and the folder is handed to that account. Under any other user
they run as that user. :func:`unavailable` says why no cluster can be had, for a skip reason.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["Cluster", "find_bindir", "unavailable"]

SUPERUSER = "am_test"


def find_bindir() -> Path | None:
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return Path(found[0]).parent if found else None


def _service_account() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    return None


def unavailable() -> str | None:
    """Why no throwaway cluster can be started here, or None when one can."""
    if find_bindir() is None:
        return "no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql"
    if os.geteuid() == 0 and (_service_account() is None or shutil.which("runuser") is None):
        return "running as root without a postgres or nobody account and runuser"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'active-memory[postgres]')"
    return None


class Cluster:
    """One started cluster; ``url`` reaches its ``postgres`` database as the superuser."""

    def __init__(self) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError(unavailable() or "no PostgreSQL")
        self._bindir = bindir
        self._account = _service_account()
        # Short: a Unix socket path must stay under ~100 bytes. Under root, in /tmp: the service
        # account must be able to reach it, which a private $TMPDIR of root's may not allow.
        where = "/tmp" if self._account is not None and os.path.isdir("/tmp") else None
        self.root = Path(tempfile.mkdtemp(prefix="ampg-", dir=where))
        self.data = self.root / "data"
        self.socket_dir = self.root
        if self._account is not None:
            os.chown(self.root, self._account.pw_uid, self._account.pw_gid)
        self.root.chmod(0o700)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")  # fmt: skip
        options = f"-c listen_addresses='' -k {self.socket_dir} -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-l",
                  str(self.root / "log"), "-o", options, "start")  # fmt: skip
        self.url = f"postgresql://{SUPERUSER}@/postgres?host={self.socket_dir}"

    def _run(self, program: str, *args: str) -> None:
        command = [str(self._bindir / program), *args]
        if self._account is not None:
            command = ["runuser", "-u", self._account.pw_name, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stderr.strip() or result.stdout}")

    def create_database(self, name: str) -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://{SUPERUSER}@/{name}?host={self.socket_dir}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
