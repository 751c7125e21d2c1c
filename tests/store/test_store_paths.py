from __future__ import annotations

import pytest

from active_memory.errors import ConfigError
from active_memory.store.paths import (
    default_store_path,
    state_dir_variable,
    zeroshot_store_path,
)

STORE = "lessons.sqlite3"
TAIL = "active-memory/lessons.sqlite3"  # an embedder's state directory holds a folder of ours


def test_active_memory_state_dir_overrides_everything() -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": "/srv/am", "XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/srv/am/{STORE}"


def test_the_zeroshot_variable_does_not_move_our_store() -> None:
    env = {"ZEROSHOT_STATE_DIR": "/srv/zs", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == (
        f"/home/me/.local/state/active-memory/{STORE}"
    )


def test_xdg_state_home_is_used_without_the_variable() -> None:
    env = {"XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/xdg/active-memory/{STORE}"


def test_home_local_state_is_the_last_resort() -> None:
    env = {"HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="darwin")) == (
        f"/home/me/.local/state/active-memory/{STORE}"
    )


def test_the_default_is_never_the_zeroshot_store() -> None:
    for env in ({"HOME": "/home/me"}, {"XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}):
        for platform in ("linux", "darwin", "win32"):
            ours = default_store_path(env=env, platform=platform)
            assert ours != zeroshot_store_path(env=env, platform=platform)
            assert "zeroshot" not in str(ours)


def test_relative_xdg_state_home_is_ignored_as_the_spec_says() -> None:
    env = {"XDG_STATE_HOME": "relative/state", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == (
        f"/home/me/.local/state/active-memory/{STORE}"
    )


def test_empty_variable_falls_through() -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": "", "XDG_STATE_HOME": "/xdg"}
    assert str(default_store_path(env=env, platform="linux")) == f"/xdg/active-memory/{STORE}"


def test_variable_may_start_with_tilde() -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": "~/am", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/home/me/am/{STORE}"


def test_relative_variable_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"ACTIVE_MEMORY_STATE_DIR.*absolute"):
        default_store_path(env={"ACTIVE_MEMORY_STATE_DIR": "state"}, platform="linux")


def test_embedder_namespace_reads_its_own_variable_and_folder() -> None:
    env = {"MYHOST_STATE_DIR": "/srv/myhost", "ACTIVE_MEMORY_STATE_DIR": "/srv/am"}
    assert str(default_store_path("myhost", env=env, platform="linux")) == f"/srv/myhost/{TAIL}"
    assert str(default_store_path("myhost", env={"XDG_STATE_HOME": "/x"}, platform="linux")) == (
        f"/x/myhost/{TAIL}"
    )


def test_the_zeroshot_namespace_is_refused_with_the_import_command() -> None:
    with pytest.raises(ConfigError, match=r"namespace.*lessons import --from-zeroshot"):
        default_store_path("zeroshot", env={"HOME": "/home/me"}, platform="linux")


def test_namespace_variable_name_is_uppercased_with_underscores() -> None:
    assert state_dir_variable() == "ACTIVE_MEMORY_STATE_DIR"
    assert state_dir_variable("my-host.dev") == "MY_HOST_DEV_STATE_DIR"


def test_windows_uses_local_app_data() -> None:
    env = {"LOCALAPPDATA": r"C:\Users\me\AppData\Local", "XDG_STATE_HOME": "/ignored"}
    assert str(default_store_path(env=env, platform="win32")) == (
        r"C:\Users\me\AppData\Local\active-memory\lessons.sqlite3"
    )
    assert str(default_store_path("myhost", env=env, platform="win32")) == (
        r"C:\Users\me\AppData\Local\myhost\state\active-memory\lessons.sqlite3"
    )


def test_windows_variable_still_wins() -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": r"D:\am", "LOCALAPPDATA": r"C:\Users\me\AppData\Local"}
    assert str(default_store_path(env=env, platform="win32")) == r"D:\am\lessons.sqlite3"


def test_windows_without_local_app_data_uses_the_profile() -> None:
    env = {"USERPROFILE": r"C:\Users\me"}
    assert str(default_store_path(env=env, platform="win32")) == (
        r"C:\Users\me\AppData\Local\active-memory\lessons.sqlite3"
    )


@pytest.mark.parametrize("namespace", ["", "My Host", "../etc", ".hidden", "a/b", "ZEROSHOT"])
def test_invalid_namespace_is_refused(namespace: str) -> None:
    with pytest.raises(ConfigError, match="namespace"):
        default_store_path(namespace, env={}, platform="linux")


def test_zeroshot_store_path_follows_the_zeroshot_docs() -> None:
    home = {"HOME": "/home/me"}
    assert str(zeroshot_store_path(env=home, platform="linux")) == (
        "/home/me/.local/state/zeroshot/active-memory/lessons.sqlite3"
    )
    env = {**home, "XDG_STATE_HOME": "/xdg"}
    assert str(zeroshot_store_path(env=env, platform="linux")) == f"/xdg/zeroshot/{TAIL}"
    env = {**env, "ZEROSHOT_STATE_DIR": "/srv/zs"}
    assert str(zeroshot_store_path(env=env, platform="linux")) == f"/srv/zs/{TAIL}"
    env = {"LOCALAPPDATA": r"C:\L"}
    assert str(zeroshot_store_path(env=env, platform="win32")) == (
        r"C:\L\zeroshot\state\active-memory\lessons.sqlite3"
    )
