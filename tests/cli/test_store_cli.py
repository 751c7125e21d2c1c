from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft, tree_digest


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "lessons.sqlite3"
    with SqliteStore(path) as store:
        store.publish(
            Publication(
                run_id="run-1",
                mutations=(
                    Mutation(
                        op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
                    ),
                ),
            )
        )
    return path


def test_store_path_defaults_to_active_memorys_own_state_dir(tmp_path: Path) -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": str(tmp_path / "am"), "ZEROSHOT_STATE_DIR": "/ignored"}
    result = run_cli(["store", "path"], env=env)
    assert result.exit_code == 0
    assert result.stdout == f"{tmp_path}/am/lessons.sqlite3\n"
    result = run_cli(["store", "path", "--json"], env=env)
    assert json.loads(result.stdout) == {"path": f"{tmp_path}/am/lessons.sqlite3", "exists": False}


def test_store_path_echoes_an_explicit_store(tmp_path: Path) -> None:
    result = run_cli(["store", "path", "--store", str(tmp_path / "x.sqlite3")])
    assert result.stdout.strip() == str(tmp_path / "x.sqlite3")


def test_store_check_prints_counts(store_file: Path) -> None:
    result = run_cli(["store", "check", "--store", str(store_file)])
    assert result.exit_code == 0, result.stderr
    assert "integrity      ok" in result.stdout
    assert "live lessons   1" in result.stdout
    result = run_cli(["store", "check", "--store", str(store_file), "--json"])
    report = json.loads(result.stdout)
    assert (report["ok"], report["generation"], report["schema_version"]) == (
        True,
        1,
        "m005_lesson_search",
    )


def test_store_check_on_a_missing_store_fails_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "lessons.sqlite3"
    result = run_cli(["store", "check", "--store", str(missing)])
    assert result.exit_code == 1
    assert "does not exist yet" in result.stderr
    assert not missing.parent.exists()


def test_store_backup_writes_a_private_copy(store_file: Path, tmp_path: Path) -> None:
    destination = tmp_path / "copy.sqlite3"
    result = run_cli(["store", "backup", str(destination), "--store", str(store_file), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"backup": str(destination)}
    assert destination.stat().st_mode & 0o777 == 0o600
    with SqliteStore(destination, read_only=True) as copy:
        assert copy.check().live == 1


def _backup(store_file: Path, destination: Path, *options: str) -> Result:
    return run_cli(["store", "backup", str(destination), *options, "--store", str(store_file)])


def test_store_backup_refuses_an_existing_file_unless_forced(
    store_file: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    refused = _backup(store_file, notes)
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"error: backup destination {str(notes)!r} already exists; choose a new path, or pass "
        "--force to replace it\n"
    )
    assert notes.read_text() == "my notes\n"

    forced = _backup(store_file, notes, "--force")
    assert forced.exit_code == 0, forced.stderr
    with SqliteStore(notes, read_only=True) as copy:
        assert copy.check().live == 1


def test_store_backup_never_replaces_the_store_its_files_or_a_directory(
    store_file: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    linked = tmp_path / "hard-link.sqlite3"
    os.link(store_file, linked)
    companion = store_file.with_name(store_file.name + "-wal")
    companion.write_bytes(b"")
    companion.chmod(0o600)
    cases = [
        (store_file, "is the store itself"),
        (store_file.parent / ".." / "state" / store_file.name, "is the store itself"),
        (linked, "is the store itself"),
        (companion, "is one of the store's own SQLite files"),
        (folder, "is a directory"),
    ]
    for destination, problem in cases:
        before = tree_digest(tmp_path)
        result = _backup(store_file, destination, "--force")
        assert result.exit_code == 2, destination
        prefix = f"error: backup destination {str(destination)!r} {problem}"
        assert result.stderr.startswith(prefix)
        assert result.stderr.count("\n") == 1
        assert tree_digest(tmp_path) == before


def _refused(args: list[str], folder: Path, expected: str) -> None:
    before = tree_digest(folder)
    result = run_cli(args)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1
    assert expected in result.stderr
    assert tree_digest(folder) == before


@pytest.mark.parametrize("command", [["store", "check"], ["lessons", "import", "-"]])
def test_non_sqlite_store_file_fails_cleanly(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "lessons.sqlite3"
    path.write_text("plain text, not a database\n" * 10)
    path.chmod(0o600)
    _refused([*command, "--store", str(path)], tmp_path, "not an SQLite database")


def test_corrupt_store_file_fails_cleanly(store_file: Path) -> None:
    data = bytearray(store_file.read_bytes())
    data[100:4096] = b"\x00\xff" * ((4096 - 100) // 2)
    store_file.write_bytes(bytes(data))
    _refused(
        ["lessons", "import", "-", "--store", str(store_file)],
        store_file.parent,
        "not a readable SQLite database",
    )


def test_store_path_that_is_a_directory_fails_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "lessons.sqlite3"
    folder.mkdir()
    _refused(["store", "check", "--store", str(folder)], tmp_path, "is a directory")


def test_unwritable_store_directory_fails_cleanly(tmp_path: Path) -> None:
    # As root a chmod'ed directory stays writable; a regular file where the directory should be
    # is unwritable for everyone, so it exercises the same refusal honestly.
    (tmp_path / "state").write_text("not a directory")
    _refused(
        ["lessons", "import", "-", "--store", str(tmp_path / "state" / "lessons.sqlite3")],
        tmp_path,
        "regular file",
    )


@pytest.mark.parametrize(
    "command", [["lessons", "list"], ["lessons", "import", "-"], ["store", "check"]]
)
def test_a_healthy_store_sqlite_cannot_open_beside_is_not_called_damaged(
    store_file: Path, command: list[str]
) -> None:
    # A directory where SQLite must create <store>-wal: the failure SQLite reports is the one a
    # damaged file gives, but the advice must point at the companion, not at the healthy store.
    companion = store_file.with_name(store_file.name + "-wal")
    companion.mkdir()
    result = run_cli([*command, "--store", str(store_file)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: lesson store {str(store_file)!r}: its companion {str(companion)!r} is not a "
        "regular file, so SQLite cannot write its journal there; move that aside (the store "
        "itself was left untouched)\n"
    )


def test_relative_state_dir_is_bad_input() -> None:
    env = {"ACTIVE_MEMORY_STATE_DIR": "relative/state"}
    result = run_cli(["store", "path"], env=env)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: ACTIVE_MEMORY_STATE_DIR: 'relative/state' must be an absolute path\n"
    )


def test_backup_of_a_team_store_says_an_export_is_no_backup_and_what_it_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["store", "backup", "copy.sqlite3", "--store", "https://memory.example.com"])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "pg_dump" in line
    assert "is no backup" in line
    assert "portable copy" not in line
    for dropped in ("the past revisions", "the held proposals", "the generation"):
        assert dropped in line


def test_an_export_keeps_current_revisions_and_tombstones_but_not_history_or_held(
    tmp_path: Path,
) -> None:
    """What the team store's backup refusal says of an export, checked on a store."""
    from active_memory.store.quarantine import QuarantineEntry

    lesson_id, retired_id = new_lesson_id(), new_lesson_id()
    with SqliteStore(tmp_path / "source.sqlite3") as source:
        for run, op, ident, revision, title in (
            ("run-1", "upsert", lesson_id, 0, "First text"),
            ("run-2", "upsert", lesson_id, 1, "Second text"),
            ("run-1", "upsert", retired_id, 0, "Soon retired"),
            ("run-3", "retire", retired_id, 1, ""),
        ):
            draft = make_draft(title) if op == "upsert" else None
            mutation = Mutation(op=op, id=ident, expected_revision=revision, draft=draft)
            source.publish(Publication(run_id=run, mutations=(mutation,)))
        held = QuarantineEntry(new_lesson_id(), "run-4", "r", ("s:c",), make_draft("Held"), "")
        source.hold([held])
        lines = list(source.export())
        generation = source.generation()
    with SqliteStore(tmp_path / "copy.sqlite3") as copy:
        copy.import_lines(lines)
        assert copy.get(lesson_id).revision == 2  # the current revision, kept
        assert [t.id for t in copy.list_retired()] == [retired_id]
        assert [entry.revision for entry in copy.history(lesson_id)] == [2]  # no past revision
        assert copy.held() == ()
        assert copy.generation() != generation
