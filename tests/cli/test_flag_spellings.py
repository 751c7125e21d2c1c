"""One meaning per flag: ``--repository`` is a checkout folder in every command, a key is
``--repository-key``, and each renamed flag's old spelling still works, with a warning, for one
release."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import Result

from active_memory.cli.spellings import RenamedOption, checkout_key
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.sqlite import SqliteStore
from cli_runner import all_commands, run_cli
from factories import REPOSITORY, make_draft
from fixture_runs import RUNS

OTHER = "forge:example.com/acme/other"
KEY_WARNING = f"warning: --repository with a key is deprecated; use --repository-key {REPOSITORY}"


def _options(spelling: str) -> list[tuple[str, click.Option]]:
    return [(name, param) for name, command in all_commands() for param in command.params
            if isinstance(param, click.Option) and spelling in param.opts]  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout whose origin remote gives the key REPOSITORY (read without running git)."""
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://example.com/acme/app.git\n', "utf-8"
    )
    (root / "src").mkdir()
    return root


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    """A store with one lesson of REPOSITORY and one of another repository."""
    path = tmp_path / "state" / "lessons.sqlite3"
    drafts = (make_draft("This checkout's"), make_draft("Another's", repository=OTHER))
    with SqliteStore(path) as store:
        store.publish(Publication(run_id="run-1", mutations=tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft)
            for draft in drafts)))  # fmt: skip
    return path


def _titles(result: Result) -> list[str]:
    assert result.exit_code == 0, result.stderr
    return [lesson["title"] for lesson in json.loads(result.stdout)]


def _one_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


def test_every_repository_flag_is_a_checkout_folder() -> None:
    found = _options("--repository")
    named = {"hooks install", "lessons list", "mcp", "recall", "serve", "server token create"}
    assert {name for name, _option in found} >= named
    for name, option in found:
        folder = isinstance(option.type, click.Path) and not option.type.file_okay
        assert folder or option.callback is checkout_key, name


def test_a_key_is_always_repository_key() -> None:
    assert {name for name, _option in _options("--repository-key")} == {
        "lessons list",
        "server token create",
    }


def test_lessons_list_repository_lists_that_checkouts_lessons(
    checkout: Path, store_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = run_cli(["lessons", "list", "--repository", checkout, "--store", store_file, "--json"])
    assert _titles(listed) == ["This checkout's"]
    assert listed.stderr == ""
    monkeypatch.chdir(checkout / "src")  # a folder inside the checkout names the same one
    here = run_cli(["lessons", "list", "--repository", ".", "--store", store_file])
    assert here.exit_code == 0, here.stderr
    assert here.stdout.splitlines()[-1] == f"1 live lesson (repository {REPOSITORY})"


def test_a_folder_with_no_lessons_is_named_by_its_key(tmp_path: Path, store_file: Path) -> None:
    # "0 live lessons" alone read as an empty store; the footer says what was asked for.
    done = run_cli(["lessons", "list", "--repository", tmp_path, "--store", store_file])
    assert done.exit_code == 0, done.stderr
    assert re.fullmatch(r"0 live lessons \(repository local:[0-9a-f]{32}\)\n", done.stdout)


def test_lessons_list_repository_key_filters_by_the_key(store_file: Path) -> None:
    listed = run_cli(["lessons", "list", "--repository-key", OTHER, "--store", store_file,
                      "--json"])  # fmt: skip
    assert _titles(listed) == ["Another's"]
    assert listed.stderr == ""


def test_lessons_list_repository_with_a_key_still_works_with_a_warning(store_file: Path) -> None:
    listed = run_cli(["lessons", "list", "--repository", REPOSITORY, "--store", store_file,
                      "--json"])  # fmt: skip
    assert _titles(listed) == ["This checkout's"]
    assert listed.stderr.splitlines() == [KEY_WARNING]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repository", "no-such-folder"],
         "error: --repository 'no-such-folder' is neither a folder nor a repository key; give a "
         "checkout folder, or a key (forge:host/owner/repo, local:<hex> or repo:<name>) with "
         "--repository-key"),
        (["--repository-key", "."],
         "error: --repository-key '.' is not a repository key; give one of "
         "forge:host/owner/repo, local:<hex> or repo:<name>, or a checkout folder with "
         "--repository"),
        (["--repository", ".", "--repository-key", REPOSITORY],
         "error: give --repository or --repository-key, not both"),
    ],
    ids=["neither", "not-a-key", "both"],
)  # fmt: skip
def test_lessons_list_refuses_a_bad_repository_in_one_sentence(
    store_file: Path, args: list[str], message: str
) -> None:
    assert _one_error(run_cli(["lessons", "list", *args, "--store", store_file])) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give the repository the token may reach"),
        (["--repository", "no-such-folder"], "is neither a folder nor a repository key"),
        (["--repository", ".", "--repository-key", REPOSITORY], "not both"),
    ],
    ids=["none", "neither", "both"],
)
def test_token_create_refuses_a_bad_repository_before_the_database(
    args: list[str], message: str
) -> None:
    result = run_cli(["server", "token", "create", "--tenant", "acme", *args,
                      "--database", "postgresql://nobody@127.0.0.1:1/none"])  # fmt: skip
    assert message in _one_error(result)


def test_token_create_repository_reaches_the_checkouts_key(
    pg_database: str, checkout: Path
) -> None:
    created = run_cli(["server", "token", "create", "--tenant", "acme", "--repository", checkout,
                       "--database", pg_database, "--json"])  # fmt: skip
    assert created.exit_code == 0, created.stderr
    assert json.loads(created.stdout)["repository"] == REPOSITORY
    old = run_cli(["server", "token", "create", "--tenant", "acme", "--repository", REPOSITORY,
                   "--database", pg_database, "--json"])  # fmt: skip
    assert old.exit_code == 0, old.stderr
    assert json.loads(old.stdout)["repository"] == REPOSITORY
    assert old.stderr.splitlines()[0] == KEY_WARNING


# Old spelling -> the command and arguments it still works in, and its one spelling now.
RENAMED = {
    "--yes": ("--force", ["lessons", "purge"]),
    "--directory": ("--dir", ["memory", "init"]),
    "--private-dir": ("--dir", ["evidence"]),
    "--file": ("--card", ["contracts", "screen"]),
}


def test_every_renamed_flag_keeps_its_old_spelling_out_of_the_help() -> None:
    renamed = {(name, option.opts[0], option.old) for name, command in all_commands()
               for option in command.params if isinstance(option, RenamedOption)}  # fmt: skip
    assert renamed == {(" ".join(where), new, old) for old, (new, where) in RENAMED.items()}
    for name, new, old in renamed:
        shown = run_cli([*name.split(), "--help"])
        assert new in shown.stdout
        assert old not in shown.stdout.replace(new, "")


def _warned(result: Result, old: str) -> Result:
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == f"warning: {old} is deprecated; use {RENAMED[old][0]}"
    return result


def test_memory_init_directory_is_dir(tmp_path: Path) -> None:
    store = tmp_path / "init.sqlite3"
    old = _warned(run_cli(["memory", "init", "--directory", tmp_path / "old", "--store", store,
                           "--json"]), "--directory")  # fmt: skip
    new = run_cli(["memory", "init", "--dir", tmp_path / "new", "--store", store, "--json"])
    assert (new.exit_code, new.stderr) == (0, "")
    assert json.loads(old.stdout)["phase"] == json.loads(new.stdout)["phase"] == "complete"
    assert (tmp_path / "old").is_dir()
    assert (tmp_path / "new").is_dir()


def test_evidence_private_dir_is_dir(tmp_path: Path) -> None:
    old = _warned(run_cli(["evidence", RUNS / "clean-success", "--private-dir", tmp_path / "old",
                           "--json"]), "--private-dir")  # fmt: skip
    new = run_cli(["evidence", RUNS / "clean-success", "--dir", tmp_path / "new", "--json"])
    assert (new.exit_code, new.stderr) == (0, "")
    assert sorted(path.name for path in (tmp_path / "old").iterdir()) == sorted(
        path.name for path in (tmp_path / "new").iterdir()
    )
    assert json.loads(old.stdout)["private_files"] == json.loads(new.stdout)["private_files"]


def test_lessons_purge_yes_is_force(store_file: Path) -> None:
    with SqliteStore(store_file) as store:
        first, second = (lesson.id for lesson in store.list_lessons())
        store.publish(Publication(run_id="run-2", mutations=(
            Mutation(op="retire", id=first, expected_revision=1),
            Mutation(op="retire", id=second, expected_revision=1))))  # fmt: skip
    old = _warned(run_cli(["lessons", "purge", first, "--yes", "--store", store_file, "--json"]),
                  "--yes")  # fmt: skip
    new = run_cli(["lessons", "purge", second, "--force", "--store", store_file, "--json"])
    assert (new.exit_code, new.stderr) == (0, "")
    assert json.loads(old.stdout)["erased_revisions"] == 1
    assert json.loads(new.stdout)["erased_revisions"] == 1


def test_contracts_screen_file_is_card(tmp_path: Path) -> None:
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"title": "Run make client after editing the schema"}), "utf-8")
    old = _warned(run_cli(["contracts", "screen", "--file", card, "--json"]), "--file")
    new = run_cli(["contracts", "screen", "--card", card, "--json"])
    assert (new.exit_code, new.stderr, new.stdout) == (0, "", old.stdout)


def test_old_and_new_spelling_with_different_values_is_bad_input(tmp_path: Path) -> None:
    result = run_cli(["evidence", RUNS / "clean-success", "--dir", tmp_path / "a",
                      "--private-dir", tmp_path / "b"])  # fmt: skip
    assert _one_error(result) == "error: give --dir once; --private-dir is its old spelling"
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()
