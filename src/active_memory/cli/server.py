"""``active-memory server``: the team memory service and its credentials.

``serve`` runs the HTTP service over a PostgreSQL database; ``token create|list|revoke``
manage the credentials it accepts (per tenant and repository, stored hashed; a token is
printed once, by ``create``; ``create --review`` issues one that may approve and reject held
proposals). ``--database`` defaults to ``$ACTIVE_MEMORY_DATABASE_URL``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    BoundedInt,
    emit_json,
    fail,
    json_option,
    reports_errors,
)
from active_memory.cli.spellings import checkout_key, chosen_repository, repository_key_option

if TYPE_CHECKING:
    from active_memory.server.credentials import Credential, CredentialStore

__all__ = ["server"]

DATABASE_ENV = "ACTIVE_MEMORY_DATABASE_URL"
_DURATION = re.compile(r"([1-9][0-9]{0,5})([mhd])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def _database(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if not value:
        fail(f"--database: give the service's postgresql:// URL or set {DATABASE_ENV}", 2)
    if not value.startswith(("postgresql://", "postgres://")):
        fail("--database: must be a postgresql:// URL", EXIT_BAD_INPUT)
    return value


database_option = click.option(
    "--database",
    envvar=DATABASE_ENV,
    callback=_database,
    expose_value=True,
    help=f"The service's PostgreSQL database URL (default: ${DATABASE_ENV}).",
)


def _server_modules(*, serving: bool = False) -> None:
    """Fail in one sentence unless what the command needs imports. ``serving`` imports the
    service itself (starlette's and uvicorn's modules and what they import), so whatever it
    cannot import is named; the token commands, which never serve HTTP, only look the HTTP
    stack up: importing it would be a third of their start-up."""
    try:
        import psycopg  # noqa: F401  (every subcommand opens the database with it)

        if serving:
            import_module("active_memory.server.run")
        # httptools: the parser under the service's own protocol guard
        for name in ("starlette", "uvicorn", "httptools"):
            _installed(name)
    except ImportError as error:
        fail(
            # The package to install, not the submodule that failed (``anyio.abc``).
            f"the memory service needs {(error.name or 'a module').partition('.')[0]}; "
            "install it with pip install 'active-memory[server]'",
            EXIT_BAD_INPUT,
        )


def _installed(name: str) -> None:
    """Raise ImportError, as ``import name`` would, when top-level module ``name`` is missing."""
    try:
        found = sys.modules[name] is not None if name in sys.modules else find_spec(name)
    except ValueError:  # a module in sys.modules without a spec: it imported, so it is there
        found = True
    if not found:
        raise ImportError(f"No module named {name!r}", name=name)


@contextmanager
def _credentials(database: str) -> Iterator[CredentialStore]:
    _server_modules()
    from active_memory.server.credentials import CredentialStore
    from active_memory.store.postgres.session import open_pool

    pool = open_pool(database, max_size=2)
    try:
        yield CredentialStore(pool)
    finally:
        pool.close()


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> timedelta | None:
    if value is None:
        return None
    match = _DURATION.fullmatch(value)
    if match is None:
        raise click.BadParameter("must be a number and a unit: 30m, 12h or 90d", ctx, param)
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def _shown(credential: Credential) -> dict[str, Any]:
    def stamp(value: datetime | None) -> str | None:
        return None if value is None else value.astimezone(UTC).isoformat(timespec="seconds")

    return {
        "id": credential.id,
        "tenant": credential.tenant,
        "repository": credential.repository,
        "graph_hash": credential.graph_hash,
        "label": credential.label,
        "run_id": credential.run_id,
        "review": credential.review,
        "state": credential.state(datetime.now(UTC)),
        "created_at": stamp(credential.created_at),
        "expires_at": stamp(credential.expires_at),
        "revoked_at": stamp(credential.revoked_at),
    }


@click.group("server")
def server() -> None:
    """The team memory service: snapshot and publication over HTTP for remote hosts."""


@server.command("serve")
@database_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=BoundedInt(1, 65535), default=8765, show_default=True)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="PEM certificate (with --tls-key): serve https.")  # fmt: skip
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--max-request-bytes", type=BoundedInt(1024), default=8 * 1024 * 1024,
              show_default=True)  # fmt: skip
@click.option("--max-response-bytes", type=BoundedInt(1024), default=96 * 1024 * 1024,
              show_default=True)  # fmt: skip
@click.option("--request-timeout", type=click.FloatRange(0.5, 600), default=10.0,
              show_default=True, help="Seconds a request may take to arrive.")  # fmt: skip
@click.option("--pool-size", type=BoundedInt(1, 200), default=16, show_default=True)
@click.option("--max-connections", type=BoundedInt(1, 100_000), default=256,
              show_default=True,
              help="Open connections in all; more are answered 503.")  # fmt: skip
@click.option("--max-connections-per-client", type=BoundedInt(1, 100_000), default=32,
              show_default=True, envvar="ACTIVE_MEMORY_MAX_CONNECTIONS_PER_CLIENT",
              help="Open connections from one client address (raise it for CI runners behind "
                   "one address); more are answered 503.")  # fmt: skip
@click.option("--max-publication-mutations", type=BoundedInt(1, 100_000), default=1000,
              show_default=True, help="Mutations one publication may name; more: 413.")  # fmt: skip
@click.option("--write-hold", type=click.FloatRange(0.1, 600), default=5.0, show_default=True,
              help="Seconds one write may hold its tenant's writers' lock; then 503.")  # fmt: skip
@click.option("--token-requests-per-s", type=click.FloatRange(0), default=200.0,
              show_default=True, help="Requests per second per token (burst: twice); "
              "more: 429. 0: no limit.")  # fmt: skip
@click.option("--token-bytes-per-s", type=BoundedInt(0), default=1024 * 1024,
              show_default=True, help="Request bytes per second per token (burst: 4 s' worth, "
              "at least --max-request-bytes); more: 429. 0: no limit.")  # fmt: skip
@reports_errors
def serve_command(
    database: str,
    host: str,
    port: int,
    tls_cert: Path | None,
    tls_key: Path | None,
    max_request_bytes: int,
    max_response_bytes: int,
    request_timeout: float,
    pool_size: int,
    max_connections: int,
    max_connections_per_client: int,
    max_publication_mutations: int,
    write_hold: float,
    token_requests_per_s: float,
    token_bytes_per_s: int,
) -> None:
    """Serve the memory service until interrupted."""
    _server_modules(serving=True)
    from active_memory.server.fairness import token_rates
    from active_memory.server.limits import ServiceLimits
    from active_memory.server.run import ServeOptions, serve

    if tls_cert is None and host not in ("127.0.0.1", "::1", "localhost"):
        click.echo(
            "warning: serving plain http on a non-loopback address; hosts refuse http:// "
            "except on loopback, so put a TLS proxy in front or pass --tls-cert/--tls-key",
            err=True,
        )
    limits = ServiceLimits(
        max_request_bytes, max_response_bytes, request_timeout, max_publication_mutations,
        write_hold, token_rates(token_requests_per_s, token_bytes_per_s, max_request_bytes),
    )  # fmt: skip
    options = ServeOptions(
        host=host, port=port, tls_cert=tls_cert, tls_key=tls_key, limits=limits,
        pool_size=pool_size, max_connections=max_connections,
        max_connections_per_client=max_connections_per_client,
    )  # fmt: skip
    serve(
        database,
        options,
        lambda url: click.echo(f"serving the memory service on {url}", err=True),
    )


@server.group("token")
def token() -> None:
    """Credentials of the memory service: one per tenant and repository."""


@token.command("create")
@database_option
@click.option("--tenant", required=True, help="Tenant name: a-z, 0-9 and _, up to 40.")
@click.option(
    "--repository",
    metavar="CHECKOUT",
    callback=checkout_key,
    help="The token may reach the repository of this checkout folder.",
)
@repository_key_option("The repository key the token may reach (or give --repository).")
@click.option("--graph", "graph_hash", default=None, help="Confine graph lessons to one graph.")
@click.option("--label", default="", help="Who or what holds the token (shown by list).")
@click.option("--expires-in", callback=_duration, default=None, help="e.g. 30m, 12h, 90d.")
@click.option("--run", "run_id", default=None,
              help="Bind the token to one run id: writes under any other are refused.")  # fmt: skip
@click.option("--review", is_flag=True,
              help="The token may approve and reject held proposals (lessons review).")  # fmt: skip
@json_option
@reports_errors
def create_command(
    database: str,
    tenant: str,
    repository: str | None,
    repository_key: str | None,
    graph_hash: str | None,
    label: str,
    expires_in: timedelta | None,
    run_id: str | None,
    review: bool,
    as_json: bool,
) -> None:
    """Issue a token; it is printed once and stored only as a hash."""
    repository = chosen_repository(repository, repository_key)
    if repository is None:
        fail("give the repository the token may reach: --repository-key KEY, or --repository "
             "with its checkout folder", EXIT_BAD_INPUT)  # fmt: skip
    with _credentials(database) as credentials:
        issued = credentials.create(
            tenant=tenant,
            repository=repository,
            graph_hash=graph_hash,
            label=label,
            expires_in=expires_in,
            run_id=run_id,
            review=review,
        )
        _server_modules()
        from active_memory.store.postgres import PostgresStore

        PostgresStore(database, tenant=tenant, pool_size=1).close()  # the tenant's schema
    if as_json:
        emit_json({**_shown(issued.credential), "token": issued.token})
        return
    click.echo(issued.token)
    reviews = ", which may approve and reject held proposals" if review else ""
    click.echo(
        f"credential {issued.credential.id} for tenant {tenant!r}, repository {repository!r}"
        f"{reviews}; the token is shown only now",
        err=True,
    )


@token.command("list")
@database_option
@click.option("--tenant", default=None, help="Only this tenant's credentials.")
@json_option
@reports_errors
def list_command(database: str, tenant: str | None, as_json: bool) -> None:
    """List credentials (never their secrets)."""
    with _credentials(database) as credentials:
        shown = [_shown(c) for c in credentials.list_credentials(tenant)]
    if as_json:
        emit_json(shown)
        return
    if not shown:
        click.echo("no credentials", err=True)
    for item in shown:
        label = f" {item['label']!r}" if item["label"] else ""
        reviews = " (review)" if item["review"] else ""
        click.echo(
            f"{item['id']}  {item['state']:<7}  {item['tenant']}  {item['repository']}{label}"
            f"{reviews}"
        )


@token.command("revoke")
@click.argument("credential_id", metavar="ID")
@database_option
@json_option
@reports_errors
def revoke_command(database: str, credential_id: str, as_json: bool) -> None:
    """Revoke a credential: the service refuses its token from the next request on."""
    with _credentials(database) as credentials:
        revoked = credentials.revoke(credential_id)
    if as_json:
        emit_json(_shown(revoked))
        return
    click.echo(f"revoked {revoked.id} ({revoked.tenant}, {revoked.repository})")
