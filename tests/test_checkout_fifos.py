"""FIFOs planted where git keeps its files: repository identity and checkout inspection answer
at once (a local key, or one ProvenanceError sentence) instead of waiting for a writer.

Each case runs in its own process with a time limit, because what failed was that it never
returned: ``open()`` on a FIFO waits for a writer, and git itself does the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

SRC = Path(__file__).resolve().parents[1] / "src"

SCRIPT = """
import json, sys
from active_memory import provenance
from active_memory.errors import ProvenanceError
from active_memory.repository import local_repository_key, repository_key

provenance.GIT_TIMEOUT_S = 2.0
path = sys.argv[1]
result = {"key_is_local": repository_key(path) == local_repository_key(path)}
for name in ("inspect_checkout", "fingerprint"):
    try:
        getattr(provenance, name)(path)
        result[name] = "ok"
    except ProvenanceError as error:
        result[name] = str(error)
print(json.dumps(result))
"""


def _probe(checkout: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(checkout)],
        capture_output=True,
        text=True,
        timeout=30,  # the hang this guards against lasted for ever
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _repo(root: Path) -> git.Repo:
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Test")
        config.set_value("user", "email", "test@example.invalid")
    (root / "README").write_text("hi\n")
    repo.index.add(["README"])
    repo.index.commit("first")
    return repo


def test_a_fifo_named_dot_git_gives_a_local_key_and_one_sentence(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".git")

    result = _probe(tmp_path)

    assert result["key_is_local"] is True
    assert "FIFO (named pipe) at" in str(result["inspect_checkout"])
    assert str(result["fingerprint"]).endswith("remove it to inspect the checkout")


@pytest.mark.parametrize("name", ["config", "info/exclude"])
def test_a_fifo_in_the_git_directory_is_refused_before_git_runs(tmp_path: Path, name: str) -> None:
    _repo(tmp_path)
    target = tmp_path / ".git" / name
    target.parent.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    os.mkfifo(target)

    result = _probe(tmp_path)

    assert result["key_is_local"] is True
    assert f"FIFO (named pipe) at {str(target)!r}" in str(result["inspect_checkout"])


def test_a_fifo_commondir_of_a_linked_worktree_is_not_waited_on(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "main")
    repo.git.worktree("add", str(tmp_path / "linked"))
    gitdir = (tmp_path / "linked" / ".git").read_text().split(":", 1)[1].strip()
    commondir = Path(gitdir) / "commondir"
    commondir.unlink()
    os.mkfifo(commondir)

    result = _probe(tmp_path / "linked")

    assert result["key_is_local"] is True


@pytest.mark.slow
def test_a_git_command_held_by_a_fifo_in_the_work_tree_times_out_in_one_sentence(
    tmp_path: Path,
) -> None:
    """Slow: it waits out the 2 s git deadline, in a process of its own."""
    _repo(tmp_path)
    os.mkfifo(tmp_path / ".gitignore")  # git status opens it and waits for a writer

    result = _probe(tmp_path)

    assert "did not finish within 2 s" in str(result["inspect_checkout"]), result
