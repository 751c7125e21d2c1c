"""docs/team.md, on a throwaway PostgreSQL cluster: issuing and revoking tokens, serving the
service (plain and TLS), and the host example against a running service."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.repository import repository_key
from active_memory.server import RunningService
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.remote import RemoteBackend
from active_memory.store.select import SERVICE_TOKEN_ENV
from active_memory.store.sqlite import SqliteStore
from docs.pages import claim
from docs.scenes import Scene
from factories import WEAK_RECOMMENDATION, make_draft, make_graph_draft
from team_service import running_service

PAGE = "docs/team.md"
TOKENS = claim(PAGE, "tokens")
SERVE = claim(PAGE, "serve")
HOST = claim(PAGE, "host")
ADMIN_POSTGRES = claim(PAGE, "admin-postgres")
ADMIN_SERVICE = claim(PAGE, "admin-service")
ADMIN_REFUSED = claim(PAGE, "admin-refused")
APP = "forge:github.com/acme/app"
C, D, F = (f"lesson-01JD6Z4Q8N3V5W7X9Y1Z2A3B4{letter}" for letter in "CDF")
SHOWN_URL = "https://memory.internal:8765"
SHOWN_IDS = ("1ff88916521c843f", "0be7138d92e1c032")  # the ids the page's creates drew


@pytest.fixture
def running(pg_database: str) -> Iterator[RunningService]:
    with running_service(pg_database, pool_size=4) as started:
        yield started


@pytest.fixture
def database(pg_database: str, tmp_path: Path) -> Iterator[str]:
    """A database of this test's own in the session's cluster: the page lists every token."""
    import psycopg

    name = "docs_" + uuid.uuid4().hex
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield re.sub(r"(?<=@/)[^?]+", name, pg_database)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_tokens_are_issued_listed_and_revoked(database: str, tmp_path: Path) -> None:
    """Slow: seven commands, one process each, on PostgreSQL (about 6 s on two cores)."""
    drawn = iter(SHOWN_IDS)

    def learn(printed: str) -> dict[str, str]:
        """The id a `token create` drew stands where the page shows its own."""
        found = re.search(r'credential ([0-9a-f]{16}) for|"id": "([0-9a-f]{16})"', printed)
        return {next(drawn): found[1] or found[2]} if found else {}

    Scene(tmp_path, {"ACTIVE_MEMORY_DATABASE_URL": database}).run(TOKENS, learn=learn)


@pytest.mark.slow
def test_the_service_serves_plain_http_and_tls(database: str, tmp_path: Path) -> None:
    """Slow: makes a certificate with openssl and starts the service twice (about 3 s)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test certificate")
    # A P-256 key: made in milliseconds, where an RSA key's prime search takes 0.1 to 1 CPU-s.
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
         "-subj", "/CN=127.0.0.1"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    aliases = {}
    for shown in ("8765", "18766"):
        port = str(_free_port())
        aliases |= {f"--port {shown}": f"--port {port}", f"127.0.0.1:{shown}": f"127.0.0.1:{port}"}
    Scene(tmp_path, {"ACTIVE_MEMORY_DATABASE_URL": database}, aliases).serve(SERVE)


def test_the_host_example_opens_a_run_over_the_service(
    running: RunningService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = (HOST.body + "\n").replace("    ...\n", "    seen = run.lessons\n")
    assert SHOWN_URL in example
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    repository = repository_key(checkout)
    token = running.service.credentials.create(tenant="docs", repository=repository).token
    monkeypatch.setenv(SERVICE_TOKEN_ENV, token)
    lesson_id = new_lesson_id()
    with RemoteBackend(running.url, token=token) as writer:
        draft = make_draft(repository=repository)
        writer.publish(
            Publication(
                run_id="seed",
                mutations=(Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft),),
            )
        )
    namespace: dict[str, Any] = {"run_id": "run-docs", "checkout": checkout}
    exec(compile(example.replace(SHOWN_URL, running.url), HOST.where, "exec"), namespace)
    assert [lesson.id for lesson in namespace["seen"]] == [lesson_id]


def _export_file(folder: Path) -> Path:
    """lessons.jsonl: C, a repository lesson of acme/app, and D, a graph lesson, as exported."""
    store = SqliteStore(folder / "source" / "lessons.sqlite3")
    graph = make_graph_draft(title="Return the verdict object, not prose")
    drafts = {C: make_draft("Run the schema check before editing models", repository=APP), D: graph}
    mutations = tuple(
        Mutation(op="upsert", id=i, expected_revision=0, draft=d) for i, d in drafts.items()
    )
    with store:
        store.publish(Publication(run_id="run-1", mutations=mutations))
        lines = list(store.export())
    exported = folder / "lessons.jsonl"
    exported.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return exported


@pytest.mark.slow
def test_admin_commands_on_postgresql_and_through_the_service(
    database: str, tmp_path: Path
) -> None:
    """Slow: ten commands, one process each, on PostgreSQL and the service (about 8 s)."""
    _export_file(tmp_path)
    Scene(tmp_path, {"ACTIVE_MEMORY_DATABASE_URL": database}).run(ADMIN_POSTGRES)
    title = "Pin the fixture seed before rerunning flaky tests"
    draft = make_draft(title, recommendation=WEAK_RECOMMENDATION, repository=APP)
    # The postmortem's claim is not what the page lists: the service keeps its own signals.
    held = QuarantineEntry(F, "run-7", "repository_discovery", ("claimed:by_host",), draft, "")
    with running_service(database, pool_size=4) as running:
        credentials = running.service.credentials
        host = credentials.create(tenant="acme", repository=APP).token
        with RemoteBackend(running.url, token=host) as postmortem:
            postmortem.hold([held])
        token = credentials.create(tenant="acme", repository=APP, review=True).token
        scene = Scene(tmp_path, {SERVICE_TOKEN_ENV: token}, {SHOWN_URL: running.url})
        scene.run(ADMIN_SERVICE)
        scene.run(ADMIN_REFUSED)
