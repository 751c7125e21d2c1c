"""``check()`` on both engines: every live row against its checksum and screened, every past
revision readable, the counters against a recount; SQLite adds its file's integrity, PostgreSQL
its migration ledger. ``store check --store postgresql://…`` prints it like a file's."""

from __future__ import annotations

import json

from engines import Engine, Store

from active_memory.store.select import TENANT_ENV
from cli_runner import run_cli
from factories import REPOSITORY, make_draft, publish_new


def test_a_healthy_store_checks_ok_with_its_counts(store: Store) -> None:
    publish_new(store, make_draft("One"), make_draft("Two"))
    report = store.check()
    assert report.ok, report.problems
    assert (report.live, report.tombstones, report.history_rows, report.generation) == (2, 0, 2, 1)
    assert report.migrations >= 1
    assert report.file_bytes > 0


def test_an_edited_row_and_counter_are_named_by_id(engine: Engine, store: Store) -> None:
    (lesson_id,) = publish_new(store, make_draft("Edited behind the store's back"))
    engine.raw(store, "UPDATE records SET body = replace(body, 'Edited', 'Changed')")
    engine.raw(store, "UPDATE meta SET live_count = 7")
    problems = store.check().problems
    assert any(lesson_id in problem and "checksum" in problem for problem in problems), problems
    assert any(problem.startswith("capacity counters") for problem in problems), problems
    assert not any("Changed behind" in problem for problem in problems)  # never the text


def test_store_check_of_a_postgresql_tenant(engine: Engine, store: Store) -> None:
    if engine.name != "postgres":
        return  # a file's check is tests/cli's
    publish_new(store, make_draft("Checked through the CLI"))
    url, tenant = engine.location().split("|")
    result = run_cli(["store", "check", "--json", "--store", url], env={TENANT_ENV: tenant})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["ok"], report["live"], report["schema_version"]) == (
        True,
        1,
        "m004_quiet_counters",
    )
    assert tenant in report["path"]
    engine.raw(store, "UPDATE meta SET live_count = 7")
    failed = run_cli(["store", "check", "--store", url], env={TENANT_ENV: tenant})
    assert failed.exit_code == 1
    assert "capacity counters" in failed.stdout


def _scope_findings(store: Store) -> list[str]:
    return [problem for problem in store.check().problems if "scope_counts" in problem]


def test_a_scope_count_off_by_one_is_one_finding_naming_the_table_and_the_repair(
    engine: Engine, store: Store
) -> None:
    publish_new(store, make_draft("One"), make_draft("Two"), make_draft("Elsewhere",
                repository="forge:github.com/acme/other"))  # fmt: skip
    assert store.check().ok
    engine.raw(store, "UPDATE scope_counts SET live = live + 1 WHERE name = ?", (REPOSITORY,))
    (finding,) = _scope_findings(store)
    assert f"repository {REPOSITORY!r} holds 3 where a recount finds 2" in finding
    assert "acme/other" not in finding  # its count is right
    assert finding.endswith("rebuild the counts with `active-memory store check --repair`")
    engine.raw(store, "DELETE FROM scope_counts WHERE name = 'forge:github.com/acme/other'")
    (finding,) = _scope_findings(store)
    assert "repository 'forge:github.com/acme/other' holds 0 where a recount finds 1" in finding


def test_rebuilding_the_counts_restores_them_and_changes_no_lesson(
    engine: Engine, store: Store
) -> None:
    publish_new(store, make_draft("One"), make_draft("Two"))
    before = store.check()
    engine.raw(store, "UPDATE scope_counts SET live = 40")
    engine.raw(store, "UPDATE meta SET live_count = 7")
    assert len(store.check().problems) == 2
    store.rebuild_counts()
    after = store.check()
    assert after.ok, after.problems
    assert (after.generation, after.live, after.history_rows) == (
        before.generation,
        before.live,
        before.history_rows,
    )
    assert store.lesson_page().repositories == {REPOSITORY: 2}


def test_store_check_repair_rebuilds_the_counts_on_either_engine(
    engine: Engine, store: Store
) -> None:
    publish_new(store, make_draft("Counted"))
    location, *tenant = engine.location().split("|")
    env = {TENANT_ENV: tenant[0]} if tenant else {}
    engine.raw(store, "UPDATE scope_counts SET live = live - 1")
    failed = run_cli(["store", "check", "--store", location], env=env)
    assert failed.exit_code == 1
    assert "the table scope_counts" in failed.stdout
    repaired = run_cli(["store", "check", "--repair", "--json", "--store", location], env=env)
    assert repaired.exit_code == 0, repaired.output
    report = json.loads(repaired.stdout)
    assert (report["ok"], report["repaired_counts"], report["live"]) == (True, True, 1)
    assert run_cli(["store", "check", "--store", location], env=env).exit_code == 0
