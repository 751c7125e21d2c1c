"""The fallback's plain route to the repository key gives repository_key's key, or leaves it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from active_memory.hooks.checkout_key import plain_checkout, plain_repository_key
from active_memory.repository import find_checkout, repository_key


def _plain_key(workspace: Path) -> str | None:
    found = plain_checkout(str(workspace))
    return None if found is None else plain_repository_key(found[1])


def _checkout(root: Path, config: str | bytes) -> Path:
    (root / ".git").mkdir(parents=True)
    data = config.encode() if isinstance(config, str) else config
    (root / ".git" / "config").write_bytes(data)
    return root


def _origin(url: str) -> str:
    return (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    )


PLAIN_REMOTES = [
    "https://github.com/acme/widgets.git",
    "https://GitHub.com/Acme/Widgets",
    "http://example.org/a/b/c/",
    "git://host.example/x.git",
    "ssh://host.example/team/tool",
    "git@github.com:acme/widgets.git",
    "git@github.com:acme/widgets.git/",
    "github.com:acme/widgets",
    "deploy_bot@git.example.com:a/b~c/d-e",
    "C:/repos/widgets",
]
OTHER_REMOTES = [
    "ssh://git@github.com/acme/widgets.git",
    "https://user:token@github.com/acme/widgets.git",
    "https://github.com:8443/acme/widgets",
    "ftp://host:21/a/b",
    "HTTPS://github.com/acme/x",
    "https://github.com/acme/wid gets",
    "https://github.com/",
    "https://github.com",
    "https://github.com/acme/../etc",
    "https://github.com/acme/widgets?x=1",
    "https://github.com/acme/widgets#frag",
    "https://github.com/a//b",
    "https://github.com/" + "a" * 300,
    "https://bücher.example/a/b",
    "git@host:.git",
    "git@host://x",
    "x@y@host:a/b",
    "@host:a/b",
    "/srv/git/widgets.git",
    "../widgets",
    "file:///srv/git/widgets.git",
    '"https://github.com/acme/widgets.git"',
    "https://github.com/acme/widgets.git ; a comment",
    "https://github.com/acme/widgets.git # a comment",
    "https://github.com/acme/wid\tgets",
    "",
]


@pytest.mark.parametrize("url", PLAIN_REMOTES + OTHER_REMOTES)
def test_the_plain_route_gives_the_key_of_the_full_derivation_or_none(
    tmp_path: Path, url: str
) -> None:
    workspace = _checkout(tmp_path / "checkout", _origin(url))
    plain = _plain_key(workspace)
    assert plain == repository_key(workspace) if url in PLAIN_REMOTES else plain is None
    inner = workspace / "src" / "deep"
    inner.mkdir(parents=True)
    assert _plain_key(inner) == plain  # from a folder inside the checkout too


CONFIGS = {
    "tabs and spaces": '[remote "origin"]\n  \t url\t=  https://h.example/a/b  \n',
    "capital section and key": '[Remote "origin"]\nURL=https://h.example/a/b\n',
    "spaces in brackets": '[ remote "origin" ]\nurl = https://h.example/a/b\n',
    "crlf": '[remote "origin"]\r\n\turl = https://h.example/a/b\r\n',
    "origin after another remote": (
        '[remote "upstream"]\n\turl = https://h.example/up/b\n'
        '[remote "origin"]\n\turl = https://h.example/a/b\n'
    ),
    "pushurl and a comment first": (
        '[remote "origin"]\n\tpushurl = https://h.example/push/b\n'
        "\t# url = https://h.example/commented/b\n\turl = https://h.example/a/b\n"
    ),
    "second url": '[remote "origin"]\n\turl = https://h.example/a/b\n\turl = https://h.example/c/d\n',
}
UNPLAIN_CONFIGS = {
    "url before any section": "url = https://h.example/a/b\n",
    "section and url on one line": '[remote "origin"] url = https://h.example/a/b\n',
    "empty url": '[remote "origin"]\n\turl =\n\turl = https://h.example/a/b\n',
    "no remote": "[core]\n\tbare = false\n",
    "another remote only": '[remote "upstream"]\n\turl = https://h.example/a/b\n',
    "dotted section": "[remote.origin]\n\turl = https://h.example/a/b\n",
    "no space before the quote": '[remote"origin"]\n\turl = https://h.example/a/b\n',
    "escaped subsection": '[remote "ori\\"gin"]\n\turl = https://h.example/a/b\n',
    "url in another section": '[remote "origin"]\n[core]\n\turl = https://h.example/a/b\n',
    "non-ASCII comment": '# café\n[remote "origin"]\n\turl = https://h.example/a/b\n',
    "empty": "",
}


@pytest.mark.parametrize("config", list(CONFIGS.values()) + list(UNPLAIN_CONFIGS.values()),
                         ids=list(CONFIGS) + list(UNPLAIN_CONFIGS))  # fmt: skip
def test_a_config_read_plainly_gives_the_full_derivations_key(tmp_path: Path, config: str) -> None:
    workspace = _checkout(tmp_path / "checkout", config)
    plain = _plain_key(workspace)
    expected = repository_key(workspace)
    if config in CONFIGS.values():
        assert (plain, expected) == ("forge:h.example/a/b", "forge:h.example/a/b")
    else:
        assert plain is None


def test_a_checkout_that_is_not_plain_is_left_to_the_full_derivation(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    if find_checkout(outside) is None:  # no checkout around the temporary folder
        assert plain_checkout(str(outside)) is None
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: /elsewhere/.git/worktrees/linked\n")
    assert plain_checkout(str(linked)) is None  # a linked worktree's .git is a file
    missing = _checkout(tmp_path / "no-config", "")
    (missing / ".git" / "config").unlink()
    found = plain_checkout(str(missing))
    assert found == (str(missing), str(missing / ".git"))
    assert plain_repository_key(found[1]) is None
    fifo = _checkout(tmp_path / "fifo", "")
    (fifo / ".git" / "config").unlink()
    os.mkfifo(fifo / ".git" / "config")
    assert plain_repository_key(str(fifo / ".git")) is None  # not opened, never waited on
