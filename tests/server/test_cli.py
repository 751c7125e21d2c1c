"""``active-memory server``: token create|list|revoke, and serve's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.errors import ScopeRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import RunningService, ServeOptions
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.remote import RemoteBackend
from cli_runner import run_cli
from factories import REPOSITORY, WEAK_RECOMMENDATION, WEAK_SIGNALS, make_draft


def _run(*args: str, database: str | None = None) -> Result:
    env = {} if database is None else {"ACTIVE_MEMORY_DATABASE_URL": database}
    return run_cli(["server", *args], env=env)


def _one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return lines[0]


def test_a_created_token_is_printed_once_and_reaches_the_service(
    pg_database: str, running: RunningService, tenant: str
) -> None:
    result = _run("token", "create", "--tenant", tenant, "--repository-key", REPOSITORY,
                  "--label", "ci runner", database=pg_database)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    token = result.stdout.strip()
    assert token.startswith("amt_")
    assert "shown only now" in result.stderr
    with RemoteBackend(running.url, token=token) as backend:
        assert backend.snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY))).lessons == ()


def test_list_shows_scopes_and_states_but_never_a_secret(pg_database: str, tenant: str) -> None:
    created = _run("token", "create", "--tenant", tenant, "--repository-key", REPOSITORY,
                   "--expires-in", "12h", "--json", database=pg_database)  # fmt: skip
    issued = json.loads(created.stdout)
    # amt_<id>_<secret>: the secret is URL-safe base64 and may itself hold underscores.
    _, _, secret = issued["token"].split("_", 2)
    listed = _run("token", "list", "--tenant", tenant, "--json", database=pg_database)
    assert listed.exit_code == 0
    (shown,) = json.loads(listed.stdout)
    assert (shown["id"], shown["state"], shown["repository"]) == (
        issued["id"],
        "active",
        REPOSITORY,
    )
    assert shown["expires_at"] is not None
    assert secret not in listed.stdout
    assert secret not in _run("token", "list", database=pg_database).stdout

    revoked = _run("token", "revoke", issued["id"], "--json", database=pg_database)
    assert json.loads(revoked.stdout)["state"] == "revoked"
    again = _run("token", "list", "--tenant", tenant, database=pg_database)
    assert "revoked" in again.stdout


def test_revoking_an_unknown_credential_fails_in_one_sentence(pg_database: str) -> None:
    result = _run("token", "revoke", "0123456789abcdef", database=pg_database)
    assert result.exit_code == 1
    assert "token list" in _one_error_line(result)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--tenant", "Bad-Name", "--repository-key", REPOSITORY], "tenant"),
        (["--tenant", "acme", "--repository-key", "not a key"], "--repository-key"),
        (["--tenant", "acme", "--repository-key", REPOSITORY, "--graph", "xyz"], "--graph"),
        (["--tenant", "acme", "--repository-key", REPOSITORY, "--expires-in", "soon"], "expires"),
    ],
    ids=["tenant", "repository", "graph", "expires"],
)
def test_bad_token_options_are_bad_input(pg_database: str, args: list[str], problem: str) -> None:
    result = _run("token", "create", *args, database=pg_database)
    assert result.exit_code == 2
    assert problem in result.stderr


def test_a_missing_or_foreign_database_url_is_bad_input() -> None:
    result = _run("token", "list")
    assert result.exit_code == 2
    assert "ACTIVE_MEMORY_DATABASE_URL" in _one_error_line(result)
    result = _run("token", "list", "--database", "sqlite:///x")
    assert result.exit_code == 2
    assert "postgresql://" in _one_error_line(result)


def test_serve_with_an_unreachable_database_fails_in_one_sentence(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/none?host={tmp_path}&connect_timeout=1"
    result = _run("serve", "--port", "1", database=url)
    assert result.exit_code == 1
    assert "cannot be reached" in _one_error_line(result)


def test_serve_wants_both_halves_of_a_tls_pair(pg_database: str, tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not used")
    result = _run("serve", "--tls-cert", str(cert), database=pg_database)
    assert result.exit_code == 2
    assert "--tls-key" in _one_error_line(result)


def test_a_token_created_with_a_run_is_bound_to_it(
    pg_database: str, running: RunningService, tenant: str
) -> None:
    created = _run("token", "create", "--tenant", tenant, "--repository-key", REPOSITORY,
                   "--run", "ci-4711", "--json", database=pg_database)  # fmt: skip
    assert created.exit_code == 0, created.stderr
    issued = json.loads(created.stdout)
    assert issued["run_id"] == "ci-4711"
    (listed,) = json.loads(_run("token", "list", "--tenant", tenant, "--json",
                                database=pg_database).stdout)  # fmt: skip
    assert listed["run_id"] == "ci-4711"
    with RemoteBackend(running.url, token=issued["token"]) as backend:
        draft = make_draft()
        mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft)
        with pytest.raises(ScopeRefused, match=r"run id 'ci-9999' is outside .*\(run 'ci-4711'\)"):
            backend.publish(Publication(run_id="ci-9999", mutations=(mutation,)))
        backend.publish(Publication(run_id="ci-4711", mutations=(mutation,)))


def test_a_token_created_with_review_approves_held_proposals(
    pg_database: str, running: RunningService, tenant: str
) -> None:
    created = _run("token", "create", "--tenant", tenant, "--repository-key", REPOSITORY,
                   "--review", "--label", "reviewers", database=pg_database)  # fmt: skip
    assert created.exit_code == 0, created.stderr
    assert "which may approve and reject held proposals" in created.stderr
    plain = json.loads(_run("token", "create", "--tenant", tenant, "--repository-key",
                            REPOSITORY, "--json", database=pg_database).stdout)  # fmt: skip
    assert plain["review"] is False
    listed = _run("token", "list", "--tenant", tenant, database=pg_database).stdout
    assert "'reviewers' (review)" in listed
    assert listed.count("(review)") == 1
    draft = make_draft("Held", recommendation=WEAK_RECOMMENDATION)
    held = QuarantineEntry(new_lesson_id(), "run-q", "r", WEAK_SIGNALS, draft, "")
    with RemoteBackend(running.url, token=plain["token"]) as host:
        host.hold([held])
        with pytest.raises(ScopeRefused, match="review permission"):
            host.approve_held(held.id)
    with RemoteBackend(running.url, token=created.stdout.strip()) as person:
        assert person.approve_held(held.id).revisions == {held.id: 1}


def test_a_run_that_is_not_one_line_is_bad_input(pg_database: str) -> None:
    result = _run("token", "create", "--tenant", "acme", "--repository-key", REPOSITORY,
                  "--run", "a\nb", database=pg_database)  # fmt: skip
    assert result.exit_code == 2
    assert "--run" in _one_error_line(result)


def test_serve_takes_the_per_address_cap_from_the_environment(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.server import run

    served: list[ServeOptions] = []
    monkeypatch.setattr(run, "serve", lambda url, options, announce=None: served.append(options))
    env = {"ACTIVE_MEMORY_DATABASE_URL": pg_database,
           "ACTIVE_MEMORY_MAX_CONNECTIONS_PER_CLIENT": "400"}  # fmt: skip
    result = run_cli(["server", "serve", "--write-hold", "2", "--token-requests-per-s", "0",
                      "--max-publication-mutations", "300"], env=env)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    (options,) = served
    assert options.max_connections_per_client == 400
    limits = options.limits
    assert (limits.write_hold_s, limits.max_publication_mutations) == (2.0, 300)
    assert limits.rates.requests_per_s is None
    assert limits.rates.byte_burst == 8 * 1024 * 1024  # the largest request, over 4 s of 1 MiB/s
