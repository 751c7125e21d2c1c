"""Where the lesson store lives by default, and which store arguments are refused.

active-memory's own state directory (namespace ``active-memory``, the default) is
``$ACTIVE_MEMORY_STATE_DIR``, else ``$XDG_STATE_HOME/active-memory``, else
``~/.local/state/active-memory``; on Windows ``%LOCALAPPDATA%\\active-memory``. The store is
``<state>/lessons.sqlite3``.

An embedder passes its own namespace (``myhost`` reads ``$MYHOST_STATE_DIR``, else
``$XDG_STATE_HOME/myhost``, else ``~/.local/state/myhost``; on Windows
``%LOCALAPPDATA%\\myhost\\state``): that is the host's state directory, so the store takes a
folder of its own inside it, ``<state>/active-memory/lessons.sqlite3``. Two hosts on one machine
never share a store by accident.

The zeroshot CLI keeps its own, incompatible store at
``~/.local/state/zeroshot/active-memory/lessons.sqlite3`` (see :func:`zeroshot_store_path`):
it is never opened as ours (:func:`check_store_location`); ``active-memory lessons import
--from-zeroshot PATH`` reads it read-only instead. A store argument that looks like a URL
(``postgresql://…``) is refused too: these commands work on a local SQLite file, and a team
backend is chosen by a host's configuration instead (:mod:`active_memory.store.select`).

Environment and platform are parameters so every precedence case can be tested on any OS.
Standard library only.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from active_memory.errors import ConfigError

__all__ = [
    "DEFAULT_NAMESPACE",
    "STORE_FILENAME",
    "ZEROSHOT_IMPORT_HINT",
    "check_store_location",
    "default_store_path",
    "is_zeroshot_store_path",
    "state_dir_variable",
    "zeroshot_store_path",
]

DEFAULT_NAMESPACE = "active-memory"
STORE_FILENAME = "lessons.sqlite3"
_STORE_FOLDER = "active-memory"
_ZEROSHOT = "zeroshot"
ZEROSHOT_IMPORT_HINT = (
    "import its lessons into an active-memory store with "
    "`active-memory lessons import --from-zeroshot PATH` instead"
)
# A namespace becomes a directory name, so no separators, no leading dot, no case games.
_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# RFC 3986 scheme then "//": postgresql://, https://, file://, s3://, …
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SUPPORTED_FORMS = (
    "a store is the path of an SQLite file, e.g. ~/.local/state/active-memory/lessons.sqlite3"
)


def _validate_namespace(namespace: str) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ConfigError(
            "namespace",
            f"{namespace!r} must be 1-64 characters of [a-z0-9._-] starting with a letter or "
            "digit, e.g. 'active-memory' or 'myhost'",
        )
    return namespace


def state_dir_variable(namespace: str = DEFAULT_NAMESPACE) -> str:
    """The environment variable that overrides the state directory: ``MYHOST_STATE_DIR``."""
    name = re.sub(r"[^A-Za-z0-9]", "_", _validate_namespace(namespace)).upper()
    return f"{name}_STATE_DIR"


def _is_windows(platform: str) -> bool:
    # sys.platform is "win32" on every Windows; Cygwin and MSYS report posix-like names.
    return platform.startswith("win")


def default_store_path(
    namespace: str = DEFAULT_NAMESPACE,
    *,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Path:
    """The default store file for ``namespace``; nothing is created or checked on disk."""
    if _validate_namespace(namespace) == _ZEROSHOT:
        raise ConfigError(
            "namespace",
            "'zeroshot' is the zeroshot CLI's own namespace and its lesson store is "
            f"incompatible with active-memory's; choose your host's own namespace, or "
            f"{ZEROSHOT_IMPORT_HINT}",
        )
    own = namespace == DEFAULT_NAMESPACE
    # Windows: active-memory's own state is %LOCALAPPDATA%\active-memory; a host's follows the
    # <host>\state convention hosts use there.
    state = _state_dir(namespace, env, platform, windows_tail=() if own else ("state",))
    store = state / STORE_FILENAME if own else state / _STORE_FOLDER / STORE_FILENAME
    return Path(str(store))


def zeroshot_store_path(
    *, env: Mapping[str, str] | None = None, platform: str | None = None
) -> Path:
    """Where the zeroshot CLI keeps its own store, as the zeroshot docs give it.

    ``$ZEROSHOT_STATE_DIR/active-memory/lessons.sqlite3``, else
    ``$XDG_STATE_HOME/zeroshot/…``, else ``~/.local/state/zeroshot/…``; on Windows
    ``%LOCALAPPDATA%\\zeroshot\\state\\active-memory\\lessons.sqlite3``. A relative
    ``ZEROSHOT_STATE_DIR`` is ignored here (this is only used to recognise that store).
    """
    environ = dict(os.environ if env is None else env)
    override = environ.get("ZEROSHOT_STATE_DIR", "")
    windows = _is_windows(sys.platform if platform is None else platform)
    pure = PureWindowsPath if windows else PurePosixPath
    if override and not pure(_expand_home(override, environ, windows)).is_absolute():
        environ.pop("ZEROSHOT_STATE_DIR")
    state = _state_dir(_ZEROSHOT, environ, platform, windows_tail=("state",))
    return Path(str(state / _STORE_FOLDER / STORE_FILENAME))


def _state_dir(
    namespace: str,
    env: Mapping[str, str] | None,
    platform: str | None,
    *,
    windows_tail: tuple[str, ...],
) -> PurePosixPath | PureWindowsPath:
    environ = os.environ if env is None else env
    system = sys.platform if platform is None else platform
    variable = state_dir_variable(namespace)
    windows = _is_windows(system)
    pure: type[PurePosixPath] | type[PureWindowsPath] = (
        PureWindowsPath if windows else PurePosixPath
    )
    state: PurePosixPath | PureWindowsPath
    override = environ.get(variable, "")
    if override:
        state = pure(_expand_home(override, environ, windows))
        if not state.is_absolute():
            raise ConfigError(variable, f"{override!r} must be an absolute path")
    elif windows:
        local = environ.get("LOCALAPPDATA", "")
        base = (
            PureWindowsPath(local)
            if local and PureWindowsPath(local).is_absolute()
            else PureWindowsPath(_home(environ, windows), "AppData", "Local")
        )
        state = base.joinpath(namespace, *windows_tail)
    else:
        xdg = environ.get("XDG_STATE_HOME", "")
        # The XDG spec says a relative value is invalid and must be ignored.
        if xdg and PurePosixPath(xdg).is_absolute():
            state = PurePosixPath(xdg) / namespace
        else:
            state = PurePosixPath(_home(environ, windows), ".local", "state", namespace)
    return state


def _home(environ: Mapping[str, str], windows: bool) -> str:
    for key in ("USERPROFILE", "HOME") if windows else ("HOME",):
        value = environ.get(key, "")
        if value:
            return value
    return str(Path.home())


def _expand_home(value: str, environ: Mapping[str, str], windows: bool) -> str:
    if value == "~" or value.startswith(("~/", "~\\")):
        return _home(environ, windows) + value[1:]
    return value


def _same_path(left: str, right: str) -> bool:
    return os.path.normcase(os.path.abspath(left)) == os.path.normcase(os.path.abspath(right))


def is_zeroshot_store_path(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> bool:
    """Whether ``path`` is where the zeroshot CLI keeps its store (by location, not content).

    Both the location the current environment selects and the plain home default count: a
    ``ZEROSHOT_STATE_DIR`` set in one shell and not in another still names the same file.
    """
    environ = os.environ if env is None else env
    given = os.fspath(path)
    candidates = {
        str(zeroshot_store_path(env=environ, platform=platform)),
        str(zeroshot_store_path(env={"HOME": _home(environ, False)}, platform="linux")),
    }
    return any(_same_path(given, candidate) for candidate in candidates)


def check_store_location(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Path:
    """``path`` as a Path if active-memory may use it as its SQLite store, else ConfigError.

    Refused: anything that looks like a URL (``postgresql://…``, ``https://…``, any
    ``scheme://``), since a path names a local SQLite file (a team store's URL is opened by
    :mod:`active_memory.store.select`, which the admin commands call for it), and the zeroshot
    CLI's own store.
    A URL is never echoed whole (it may carry a password): only its scheme is named.
    """
    if isinstance(path, bytes):
        raise ConfigError("store", "must be a text path, not bytes")
    text = os.fspath(path)
    url = _URL.match(text)
    if url:
        scheme = url.group(1).lower()
        raise ConfigError(
            "store",
            f"'{scheme}://…' looks like a URL, but this command works on a local SQLite store "
            f"file (the `lessons` commands, `postmortem`, `ui` and `mcp` also take a "
            f"postgresql:// or memory service URL: see docs/team.md); {_SUPPORTED_FORMS}",
        )
    if is_zeroshot_store_path(text, env=env, platform=platform):
        raise ConfigError(
            "store",
            f"{text!r} is the zeroshot CLI's own lesson store, which is incompatible and never "
            f"opened as active-memory's; {ZEROSHOT_IMPORT_HINT}",
        )
    return Path(text)
