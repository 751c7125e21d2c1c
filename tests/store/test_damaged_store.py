"""Damaged stores through the CLI: one sentence and exit 1, by id and never the lesson's text,
and nothing left beside a store that was refused."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.errors import StoreError
from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft
from hostile import one_sentence_or_success

pytestmark = pytest.mark.timeout(300)
LESSON = "lesson-01J00000000000000000000001"
# Only the stored card holds this; no error may repeat it.
SECRET_TITLE = "Zanzibar marmalade protocol"
READ_COMMANDS = (("lessons", "list"), ("store", "check"), ("lessons", "show", LESSON))


def _cli(store: Path, *args: str) -> Result:
    return run_cli([*args, "--store", str(store)])


def _import_line(tmp_path: Path) -> Path:
    from active_memory.models.lessons import Lesson

    line = Lesson.from_draft("lesson-01J00000000000000000000009", 1, make_draft())
    path = tmp_path / "line.jsonl"
    path.write_text(line.model_dump_json() + "\n")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "lessons.sqlite3"
    with SqliteStore(path) as opened:
        opened.publish(
            Publication(
                run_id="run-1",
                mutations=(
                    Mutation(
                        op="upsert", id=LESSON, expected_revision=0, draft=make_draft(SECRET_TITLE)
                    ),
                ),
            )
        )
    return path


def _raw(store: Path, *statements: str) -> None:
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")  # the damage lands in the file itself
    finally:
        conn.close()


def _companions(store: Path) -> list[str]:
    return sorted(p.name for p in store.parent.iterdir() if p.name.endswith(("-wal", "-shm")))


def _damage_schema_byte(store: Path, offset: int) -> None:
    data = bytearray(store.read_bytes())
    start = data.find(b"CREATE TABLE history")
    assert start > 0
    data[start + offset] = 0xFF
    store.write_bytes(bytes(data))


@pytest.mark.parametrize("offset", [0, 5, 13, 40, 120, 260])
def test_schema_text_that_is_not_utf8_is_one_sentence_for_every_command(
    store: Path, tmp_path: Path, offset: int
) -> None:
    _raw(store)
    _damage_schema_byte(store, offset)
    for command in (*READ_COMMANDS, ("lessons", "import", str(_import_line(tmp_path)))):
        result = _cli(store, *command)
        if command == ("store", "check"):
            # It compares the whole schema: it notices even a byte a listing never needs,
            # in one sentence when the store cannot be opened, else in its report.
            assert result.exit_code == 1, result.stdout
            assert result.exception is None or isinstance(result.exception, SystemExit)
            assert result.stderr.count("\n") <= 1
        else:
            one_sentence_or_success(result, failure_codes=(1,))
        assert "UnicodeDecodeError" not in result.stderr
    assert _companions(store) == []


def test_an_empty_meta_table_is_one_sentence_for_every_command(store: Path, tmp_path: Path) -> None:
    _raw(store, "DELETE FROM meta")
    for command in (*READ_COMMANDS, ("lessons", "import", str(_import_line(tmp_path)))):
        result = _cli(store, *command)
        assert one_sentence_or_success(result, failure_codes=(1,)), command
        assert "its meta table has no row" in result.stderr
    assert _companions(store) == []


def test_a_body_that_is_not_utf8_is_named_by_id_by_list_and_check_never_its_text(
    store: Path,
) -> None:
    # The card's own bytes with one made invalid: SQLite's message would quote all of them.
    _raw(
        store,
        "UPDATE records SET body = CAST(CAST(replace(body, 'marmalade', 'marm' || "
        "char(65533) || 'lade') AS BLOB) AS TEXT)",
    )
    conn = sqlite3.connect(store)
    (body,) = conn.execute("SELECT CAST(body AS BLOB) FROM records").fetchone()
    conn.execute(
        "UPDATE records SET body = CAST(? AS TEXT)",
        (bytes(body).replace("\ufffd".encode(), b"\xff"),),
    )
    conn.commit()
    conn.close()
    listed = _cli(store, "lessons", "list")
    assert one_sentence_or_success(listed, failure_codes=(1,))
    assert f"'{LESSON}' (body)" in listed.stderr
    assert _companions(store) == []  # a refused read leaves nothing beside the store
    checked = _cli(store, "store", "check")
    assert checked.exit_code == 1
    assert f"stored lesson '{LESSON}' has a body that is not UTF-8 text" in checked.stdout
    for output in (listed.stderr, checked.stdout, checked.stderr):
        assert "Zanzibar" not in output


def test_a_body_that_fails_validation_is_reported_without_its_text(store: Path) -> None:
    long_title = (SECRET_TITLE + " ") * 10
    _raw(
        store,
        f"UPDATE records SET body = json_set(body, '$.title', '{long_title}')",
        f"UPDATE history SET body = json_set(body, '$.title', '{long_title}')",
    )
    listed = _cli(store, "lessons", "list")
    assert one_sentence_or_success(listed, failure_codes=(1,))
    checked = _cli(store, "store", "check")
    assert checked.exit_code == 1
    assert f"stored lesson '{LESSON}' fails lesson validation (title:" in checked.stdout
    for output in (listed.stderr, checked.stdout):
        assert "Zanzibar" not in output


def test_a_schema_object_edited_to_still_valid_sql_fails_the_check(store: Path) -> None:
    _raw(
        store,
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = replace(sql, 'record_count + 1', 'record_count + 2') "
        "WHERE name = 'records_count_insert'",
    )
    checked = _cli(store, "store", "check")
    assert checked.exit_code == 1
    assert "the schema's trigger 'records_count_insert' differs from the one active-memory" in (
        checked.stdout
    )


def test_a_read_command_on_a_foreign_wal_database_leaves_no_companions(tmp_path: Path) -> None:
    foreign = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(foreign)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    os.chmod(foreign, 0o600)
    assert _companions(foreign) == []
    result = _cli(foreign, "lessons", "list")
    assert one_sentence_or_success(result, failure_codes=(1,))
    assert "not an active-memory lesson store" in result.stderr
    assert _companions(foreign) == []


def test_a_refused_listing_of_a_wal_store_leaves_no_companions(store: Path) -> None:
    conn = sqlite3.connect(store)  # the store stays in WAL mode, as every real store is
    (body,) = conn.execute("SELECT CAST(body AS BLOB) FROM records").fetchone()
    conn.execute("UPDATE records SET body = CAST(? AS TEXT)", (b"\xff" + bytes(body)[1:],))
    conn.commit()
    conn.close()
    assert _companions(store) == []
    for command in (("lessons", "list"), ("lessons", "show", LESSON)):
        result = _cli(store, *command)
        assert one_sentence_or_success(result, failure_codes=(1,)), command
        assert _companions(store) == [], command


def _lesson_count(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    finally:
        conn.close()


def test_a_planted_trigger_refuses_an_import_before_it_can_fire(
    store: Path, tmp_path: Path
) -> None:
    _raw(
        store,
        "CREATE TABLE fired (at TEXT)",
        "CREATE TRIGGER planted AFTER INSERT ON records BEGIN "
        "INSERT INTO fired VALUES (datetime('now')); END",
    )
    imported = _cli(store, "lessons", "import", str(_import_line(tmp_path)))
    assert one_sentence_or_success(imported, failure_codes=(1,))
    line = imported.stderr
    assert "trigger 'planted'" in line
    assert "active-memory store check" in line
    conn = sqlite3.connect(store)
    try:
        assert conn.execute("SELECT count(*) FROM fired").fetchone()[0] == 0
    finally:
        conn.close()
    assert _lesson_count(store) == 1
    checked = _cli(store, "store", "check")  # the check still opens it, and names it
    assert checked.exit_code == 1
    assert "trigger 'planted'" in checked.stdout


def test_a_planted_view_or_an_edited_trigger_of_ours_refuses_a_publication(store: Path) -> None:
    _raw(
        store,
        "CREATE VIEW lure AS SELECT id FROM records",
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = replace(sql, 'record_count + 1', 'record_count + 2') "
        "WHERE name = 'records_count_insert'",
    )
    mutation = Mutation(
        op="upsert", id="lesson-01J00000000000000000000002", expected_revision=0,
        draft=make_draft(),
    )  # fmt: skip
    with SqliteStore(store) as opened, pytest.raises(StoreError) as refused:
        opened.publish(Publication(run_id="run-2", mutations=(mutation,)))
    message = str(refused.value)
    assert "trigger 'records_count_insert' (and 1 more)" in message
    assert "nothing was written" in message
    assert _lesson_count(store) == 1


def test_a_store_with_only_its_own_triggers_and_views_is_written_as_before(store: Path) -> None:
    from active_memory.store.schema_guard import foreign_code

    conn = sqlite3.connect(store)
    try:
        assert foreign_code(conn) == []
    finally:
        conn.close()
