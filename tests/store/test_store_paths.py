from __future__ import annotations

import pytest

from active_memory.errors import ConfigError
from active_memory.store.paths import default_store_path, state_dir_variable

TAIL = "active-memory/lessons.sqlite3"


def test_namespace_variable_overrides_everything() -> None:
    env = {"ZEROSHOT_STATE_DIR": "/srv/zs", "XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/srv/zs/{TAIL}"


def test_xdg_state_home_is_used_without_the_namespace_variable() -> None:
    env = {"XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/xdg/zeroshot/{TAIL}"


def test_home_local_state_is_the_last_resort() -> None:
    env = {"HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="darwin")) == (
        f"/home/me/.local/state/zeroshot/{TAIL}"
    )


def test_relative_xdg_state_home_is_ignored_as_the_spec_says() -> None:
    env = {"XDG_STATE_HOME": "relative/state", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == (
        f"/home/me/.local/state/zeroshot/{TAIL}"
    )


def test_empty_namespace_variable_falls_through() -> None:
    env = {"ZEROSHOT_STATE_DIR": "", "XDG_STATE_HOME": "/xdg"}
    assert str(default_store_path(env=env, platform="linux")) == f"/xdg/zeroshot/{TAIL}"


def test_namespace_variable_may_start_with_tilde() -> None:
    env = {"ZEROSHOT_STATE_DIR": "~/zs", "HOME": "/home/me"}
    assert str(default_store_path(env=env, platform="linux")) == f"/home/me/zs/{TAIL}"


def test_relative_namespace_variable_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"ZEROSHOT_STATE_DIR.*absolute"):
        default_store_path(env={"ZEROSHOT_STATE_DIR": "state"}, platform="linux")


def test_embedder_namespace_reads_its_own_variable_and_folder() -> None:
    env = {"MYHOST_STATE_DIR": "/srv/myhost", "ZEROSHOT_STATE_DIR": "/srv/zs"}
    assert str(default_store_path("myhost", env=env, platform="linux")) == (f"/srv/myhost/{TAIL}")
    assert str(default_store_path("myhost", env={"XDG_STATE_HOME": "/x"}, platform="linux")) == (
        f"/x/myhost/{TAIL}"
    )


def test_namespace_variable_name_is_uppercased_with_underscores() -> None:
    assert state_dir_variable("zeroshot") == "ZEROSHOT_STATE_DIR"
    assert state_dir_variable("my-host.dev") == "MY_HOST_DEV_STATE_DIR"


def test_windows_uses_local_app_data() -> None:
    env = {"LOCALAPPDATA": r"C:\Users\me\AppData\Local", "XDG_STATE_HOME": "/ignored"}
    assert str(default_store_path(env=env, platform="win32")) == (
        r"C:\Users\me\AppData\Local\zeroshot\state\active-memory\lessons.sqlite3"
    )


def test_windows_namespace_variable_still_wins() -> None:
    env = {"ZEROSHOT_STATE_DIR": r"D:\zs", "LOCALAPPDATA": r"C:\Users\me\AppData\Local"}
    assert str(default_store_path(env=env, platform="win32")) == (
        r"D:\zs\active-memory\lessons.sqlite3"
    )


def test_windows_without_local_app_data_uses_the_profile() -> None:
    env = {"USERPROFILE": r"C:\Users\me"}
    assert str(default_store_path(env=env, platform="win32")) == (
        r"C:\Users\me\AppData\Local\zeroshot\state\active-memory\lessons.sqlite3"
    )


@pytest.mark.parametrize("namespace", ["", "My Host", "../etc", ".hidden", "a/b", "ZEROSHOT"])
def test_invalid_namespace_is_refused(namespace: str) -> None:
    with pytest.raises(ConfigError, match="namespace"):
        default_store_path(namespace, env={}, platform="linux")
