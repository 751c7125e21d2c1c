from __future__ import annotations

from pathlib import Path

import git
import pytest

from active_memory.errors import LessonValidationError
from active_memory.repository import (
    KEY_BYTES,
    find_checkout,
    local_repository_key,
    origin_url,
    repository_key,
    repository_key_from_remote,
    validate_repository_key,
)


def make_repo(path: Path, origin: str | None = None) -> git.Repo:
    repo = git.Repo.init(path)
    if origin is not None:
        repo.create_remote("origin", origin)
    return repo


def test_origin_remote_gives_a_credential_free_forge_key(tmp_path: Path) -> None:
    make_repo(tmp_path, "https://alice:s3cr3t-example@github.com/acme/widgets.git")
    assert repository_key(tmp_path) == "forge:github.com/acme/widgets"


def test_scp_like_remote(tmp_path: Path) -> None:
    make_repo(tmp_path, "git@gitlab.example.com:team/tool.git")
    assert repository_key(tmp_path) == "forge:gitlab.example.com/team/tool"


def test_subdirectory_of_a_checkout_has_the_checkout_key(tmp_path: Path) -> None:
    make_repo(tmp_path, "https://github.com/acme/widgets")
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    assert find_checkout(sub) == tmp_path
    assert repository_key(sub) == "forge:github.com/acme/widgets"


def test_only_the_origin_remote_counts(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.create_remote("upstream", "https://github.com/upstream/widgets")
    assert origin_url(tmp_path) is None
    assert repository_key(tmp_path) == local_repository_key(tmp_path)


def test_checkout_without_a_remote_gets_a_local_key_of_its_top_level(tmp_path: Path) -> None:
    make_repo(tmp_path)
    (tmp_path / "docs").mkdir()
    assert repository_key(tmp_path / "docs") == local_repository_key(tmp_path)


def test_a_directory_outside_git_gets_a_local_key(tmp_path: Path) -> None:
    assert repository_key(tmp_path) == local_repository_key(tmp_path)


def test_a_remote_that_is_a_local_path_falls_back_to_a_local_key(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone", "/srv/git/widgets.git")
    assert repository_key(tmp_path / "clone") == local_repository_key(tmp_path / "clone")


def test_a_remote_whose_key_the_rules_refuse_falls_back_to_a_local_key(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone", "https://github.com/acme/wid..gets.git")
    assert repository_key(tmp_path / "clone") == local_repository_key(tmp_path / "clone")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (3, "scope.repository: must be a string, got int"),
        (
            "repo:" + "a" * KEY_BYTES,
            f"scope.repository: is {KEY_BYTES + 5} UTF-8 bytes; the limit is",
        ),
        ("forge:host/a/b..c", "scope.repository: 'forge:host/a/b..c' is not a credential-free"),
        ("forge:user@host/a/b", "is not a credential-free repository key"),
    ],
)
def test_a_key_is_refused_naming_the_field_and_the_rule(value: object, message: str) -> None:
    with pytest.raises(LessonValidationError, match=message.replace(".", r"\.")):
        validate_repository_key("scope.repository", value)


def test_a_remote_without_a_key_is_refused_naming_it() -> None:
    with pytest.raises(LessonValidationError, match="repository: cannot derive a key from remote"):
        repository_key_from_remote("/srv/git/widgets.git")
    with pytest.raises(LessonValidationError, match="is not a credential-free repository key"):
        repository_key_from_remote("https://github.com/acme/wid..gets.git")
    # A well-known scheme's port says nothing about the repository; another scheme's does.
    assert (
        repository_key_from_remote("ssh://git@Host.example:2222/a/b.git")
        == "forge:host.example/a/b"
    )
    assert (
        repository_key_from_remote("gitx://host.example:2222/a/b") == "forge:host.example:2222/a/b"
    )


def test_linked_worktrees_read_the_shared_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "main", "https://github.com/acme/widgets.git")
    (tmp_path / "main" / "README").write_text("hi\n")
    repo.index.add(["README"])
    repo.index.commit("first")
    repo.git.worktree("add", str(tmp_path / "linked"))
    assert (tmp_path / "linked" / ".git").is_file()
    assert repository_key(tmp_path / "linked") == "forge:github.com/acme/widgets"


def test_hand_written_config_with_quotes_and_comments(tmp_path: Path) -> None:
    make_repo(tmp_path)
    config = tmp_path / ".git" / "config"
    config.write_text(
        config.read_text()
        + '[remote "fork"]\n\turl = https://github.com/me/fork\n'
        + '[remote "origin"] ; the real one\n'
        + "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        + '\tURL = "https://github.com/acme/widgets.git" # trailing comment\n'
    )
    assert origin_url(tmp_path) == "https://github.com/acme/widgets.git"


def test_a_symlink_into_a_checkout_has_the_checkout_key(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    (tmp_path / "repo" / "src").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "repo" / "src", target_is_directory=True)
    assert find_checkout(tmp_path / "link") == tmp_path / "repo"
    assert repository_key(tmp_path / "link") == local_repository_key(tmp_path / "repo")
