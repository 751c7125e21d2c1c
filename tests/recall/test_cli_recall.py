from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.hooks.fallback import exposure_file
from cli_runner import run_cli
from recall.kit import lesson_id, payload_in, seed_store, widgets_checkout, widgets_lessons


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    return workspace, store


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = run_cli(["recall", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_recall_for_a_file_prints_the_frame_and_the_report(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    code, out, _ = invoke("--repository", str(workspace), "--store", str(store),
                          "--file", "src/widgets/storage/blob.py")  # fmt: skip
    assert code == 0
    assert out.startswith("<active_memory>\n")
    assert f"[{lesson_id(2)}@1] Storage writes are batched" in out
    assert "repository forge:github.com/acme/widgets (store generation 1)" in out
    assert f"delivered         {lesson_id(2)}@1" in out
    assert "folder src/widgets/storage" in out


def test_recall_json_report_for_a_command(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    code, out, _ = invoke("--repository", str(workspace), "--store", str(store), "--json",
                          "--command", "cd docs && cat index.md")  # fmt: skip
    assert code == 0
    document = json.loads(out)
    assert document["report"]["paths"] == ["docs", "docs/index.md"]
    assert [(c["id"], c["score"], c["outcome"]) for c in document["report"]["cards"]] == [
        (lesson_id(6), 1000, "delivered")
    ]


def test_recall_from_a_hook_payload_on_stdin(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    payload = payload_in("codex/apply_patch.json", workspace).decode()
    code, out, _ = invoke("--repository", str(workspace), "--store", str(store), "--json",
                          "--tool-json", "-", stdin=payload)  # fmt: skip
    assert code == 0
    delivered = [c["id"] for c in json.loads(out)["report"]["cards"]]
    assert delivered == [lesson_id(1), lesson_id(2)]


def test_recall_shows_budget_leftovers_and_earlier_deliveries(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    ledger = Path(exposure_file(store, str(workspace.resolve()), "conv-1"))
    ledger.parent.mkdir(mode=0o700)
    ledger.write_text(f"{lesson_id(3)}@1\n")
    code, out, _ = invoke("--repository", str(workspace), "--store", str(store), "--json",
                          "--conversation", "conv-1", "--tokens", "80", "--command",
                          "grep -rn configure_bedrock src/widgets/storage")  # fmt: skip
    assert code == 0
    outcomes = {c["id"]: c["outcome"] for c in json.loads(out)["report"]["cards"]}
    assert outcomes == {lesson_id(2): "delivered", lesson_id(3): "already_delivered"}
    code, out, _ = invoke("--repository", str(workspace), "--store", str(store), "--json",
                          "--tokens", "50", "--file", "src/widgets/config.py")  # fmt: skip
    assert json.loads(out)["report"]["cards"][0]["outcome"] == "left_out"
    assert json.loads(out)["text"] == ""


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--file", "a.py", "--command", "ls"],
        ["--tool-json", "/nonexistent.json"],
    ],
)
def test_recall_bad_input_exits_2(setup: tuple[Path, Path], args: list[str]) -> None:
    workspace, store = setup
    code, _, err = invoke("--repository", str(workspace), "--store", str(store), *args)
    assert code == 2
    assert err.startswith("error: ")


def test_recall_with_an_unknown_payload_exits_2(setup: tuple[Path, Path], tmp_path: Path) -> None:
    workspace, store = setup
    payload = tmp_path / "p.json"
    payload.write_text('{"something": "else"}')
    code, _, err = invoke("--repository", str(workspace), "--store", str(store),
                          "--tool-json", str(payload))  # fmt: skip
    assert (code, "--harness" in err) == (2, True)


def test_recall_with_a_missing_store_fails_with_one_sentence(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, _ = setup
    code, _, err = invoke("--repository", str(workspace), "--store", str(tmp_path / "no.sqlite3"),
                          "--file", "a.py")  # fmt: skip
    assert code == 1
    assert err.count("\n") == 1
