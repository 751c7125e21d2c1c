"""``active-memory serve``: a long-lived recall broker for one workspace."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from types import FrameType

import click

from active_memory.cli._common import (
    BoundedInt,
    emit_json,
    store_json_command,
    store_path,
    workspace_option,
)
from active_memory.harnesses import HARNESS_NAMES
from active_memory.hooks.standalone import Server
from active_memory.models.config import ActiveMemoryConfig
from active_memory.recall.broker_limits import (
    MAX_CONNECTIONS,
    MAX_PER_PEER,
    RESERVED_SLOTS,
    BrokerLimits,
)
from active_memory.store.sqlite import SqliteStore

__all__ = ["serve"]


def _start_learning(database: Path, as_json: bool) -> None:
    """Sessions queued for learning while no worker ran get one now (detached)."""
    from active_memory.learn.folder import learn_folder
    from active_memory.learn.start import start_worker, waiting

    folder = learn_folder(database)
    count = waiting(folder)
    if not count:
        return
    start_worker(database, folder)
    if not as_json:
        click.echo(f"learning: a worker reviews {count} queued session(s); "
                   "`active-memory learn status` lists them")  # fmt: skip


# Room for the broker's connection cap (a quarter of the descriptor limit) under abuse.
_WANTED_DESCRIPTORS = 4096


def _raise_descriptor_limit() -> None:
    """Raise this process's soft descriptor limit toward the hard one (POSIX only)."""
    try:
        import resource
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = (
        _WANTED_DESCRIPTORS if hard == resource.RLIM_INFINITY else min(hard, _WANTED_DESCRIPTORS)
    )
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


@click.command("serve")
@workspace_option("The repository checkout to serve.", required=True)
@click.option("--port", type=BoundedInt(0, 65535), default=None,
              help="Port on 127.0.0.1 (default: the previous one, else any).")  # fmt: skip
@click.option("--tokens", type=BoundedInt(1, 64_000), default=8_000, show_default=True,
              help="hookInjectionTokens budget per tool call.")  # fmt: skip
@click.option("--poll", type=click.FloatRange(0.05, 60), default=1.0, show_default=True,
              help="Seconds between checks of the store generation.")  # fmt: skip
@click.option("--max-connections", type=BoundedInt(1, 65_536), default=MAX_CONNECTIONS,
              show_default=True,
              help="Connections held at once (at most a quarter of the fd limit).")  # fmt: skip
@click.option("--max-per-peer", type=BoundedInt(1, 65_536), default=MAX_PER_PEER,
              show_default=True, help="Connections held from one local user.")  # fmt: skip
@click.option("--reserved-slots", type=BoundedInt(0, 65_536), default=RESERVED_SLOTS,
              show_default=True,
              help="Connections only this user's hooks may take (at most half).")  # fmt: skip
@store_json_command
def serve(
    workspace: Path,
    port: int | None,
    tokens: int,
    poll: float,
    max_connections: int,
    max_per_peer: int,
    reserved_slots: int,
    store: Path | None,
    as_json: bool,
) -> None:
    """Serve recall to harness hooks until interrupted; reload when lessons change."""
    # Hooks run from other directories: every path they are given must be absolute.
    database = Path(os.path.abspath(store_path(store)))
    config = ActiveMemoryConfig(graph=False, hook_injection_tokens=tokens)
    limits = BrokerLimits(max_connections, max_per_peer, reserved_slots)
    with SqliteStore(database, read_only=True) as backend:
        server = Server(backend, workspace.resolve(), state_dir=database.parent / "serve",
                        store=str(database), config=config, port=port, poll_s=poll,
                        limits=limits)  # fmt: skip

        def stop(signum: int, frame: FrameType | None) -> None:
            server.close()

        _raise_descriptor_limit()
        state = server.start()
        # A closed terminal (SIGHUP) stops it as cleanly as SIGTERM: the ticket is removed.
        stops = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
        previous = {number: signal.signal(number, stop) for number in stops}
        try:
            if as_json:
                emit_json(state.model_dump(mode="json"))
            else:
                click.echo(f"serving {state.repository} for {state.workspace}")
                click.echo(f"url {state.url} (generation {state.generation})")
                click.echo(f"ticket {state.ticket}")
                click.echo(
                    f"hooks: active-memory hooks install --harness {'|'.join(HARNESS_NAMES)}"
                )
            _start_learning(database, as_json)
            server.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            server.close()
