"""Where the lesson store lives by default, per host namespace.

For namespace ``zeroshot`` (the default) the state directory is ``$ZEROSHOT_STATE_DIR``, else
``$XDG_STATE_HOME/zeroshot``, else ``~/.local/state/zeroshot``; on Windows
``%LOCALAPPDATA%\\zeroshot\\state``. The store is ``<state>/active-memory/lessons.sqlite3``.
An embedder passes its own namespace (``myhost`` reads ``$MYHOST_STATE_DIR``) so two hosts on
one machine never share a store by accident.

Environment and platform are parameters so every precedence case can be tested on any OS.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from active_memory.errors import ConfigError

__all__ = ["DEFAULT_NAMESPACE", "STORE_FILENAME", "default_store_path", "state_dir_variable"]

DEFAULT_NAMESPACE = "zeroshot"
STORE_FILENAME = "lessons.sqlite3"
_STORE_FOLDER = "active-memory"
# A namespace becomes a directory name, so no separators, no leading dot, no case games.
_NAMESPACE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def _validate_namespace(namespace: str) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ConfigError(
            "namespace",
            f"{namespace!r} must be 1-64 characters of [a-z0-9._-] starting with a letter or "
            "digit, e.g. 'zeroshot' or 'myhost'",
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
    environ = os.environ if env is None else env
    system = sys.platform if platform is None else platform
    variable = state_dir_variable(namespace)
    windows = _is_windows(system)
    pure = PureWindowsPath if windows else PurePosixPath

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
        state = base / namespace / "state"
    else:
        xdg = environ.get("XDG_STATE_HOME", "")
        # The XDG spec says a relative value is invalid and must be ignored.
        if xdg and PurePosixPath(xdg).is_absolute():
            state = PurePosixPath(xdg) / namespace
        else:
            state = PurePosixPath(_home(environ, windows), ".local", "state", namespace)
    return Path(str(state / _STORE_FOLDER / STORE_FILENAME))


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
