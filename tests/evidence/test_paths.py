"""Evidence paths: workspace-relative, and no home directory names its user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.evidence.builder import build_evidence
from active_memory.evidence.paths import PathRewriter
from active_memory.evidence.sources import open_run_source
from active_memory.models.run_parts import Checkout
from fixture_runs import CLAUDE, RUNS

WORKSPACE = "/home/alice/projects/shop"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("/home/alice/projects/shop/src/app.py:12", "src/app.py:12"),
        ('{"file_path":"/home/alice/projects/shop/src/app.py"}', '{"file_path":"src/app.py"}'),
        ("cd /home/alice/projects/shop && pytest", "cd . && pytest"),
        ("cd /home/alice/projects/shop/ && pytest", "cd . && pytest"),
        ("/home/alice/projects/shop-2/src/app.py", "~/projects/shop-2/src/app.py"),
        ("/home/alice/.npmrc", "~/.npmrc"),
        ("see /Users/bob/notes.txt", "see ~/notes.txt"),
        ("/root/.bashrc", "~/.bashrc"),
        ("C:\\Users\\carol\\repo\\a.py", "~\\repo\\a.py"),
        ("/tmp/claude-1000/-home-alice-projects-shop/tasks/b1.output",
         "/tmp/claude-1000/-~-projects-shop/tasks/b1.output"),
        ("\x1b[90m/home/alice/projects/other\x1b[39m", "~/projects/other"),
        ("/mnt/home/alice/x", "/mnt/home/alice/x"),
        ("/usr/lib/python3.11/os.py", "/usr/lib/python3.11/os.py"),
        ("src/app.py", "src/app.py"),
    ],
)  # fmt: skip
def test_paths_are_relative_to_the_workspace_and_homes_are_tilde(text: str, shown: str) -> None:
    assert PathRewriter(WORKSPACE).text(text) == shown


def test_the_runtime_keeps_where_but_not_who() -> None:
    paths = PathRewriter(WORKSPACE)
    assert paths.value({"cwd": WORKSPACE, "n": 3, "dirs": ["/home/alice/x"]}) == {
        "cwd": "~/projects/shop", "n": 3, "dirs": ["~/x"],
    }  # fmt: skip


def test_without_a_workspace_only_homes_change() -> None:
    assert PathRewriter(None).text("/home/alice/projects/shop/a.py") == "~/projects/shop/a.py"
    assert PathRewriter("/").text("/etc/hosts") == "/etc/hosts"


def test_claude_evidence_cites_workspace_paths_and_names_no_home(tmp_path: Path) -> None:
    record = open_run_source(CLAUDE / "subagent-files.jsonl", tmp_path / "rec")
    assert record.runtime["cwd"] == "/home/dev/order-service"
    for specialist in ("repository_discovery", "repository_maintenance", "graph_discovery"):
        bundle = build_evidence(record, specialist, private_dir=tmp_path / specialist)
        assert "/home/dev" not in bundle.serialized
        for private in bundle.private_files.values():
            assert "/home/dev" not in private.read_text(encoding="utf-8")
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    assert bundle.payload["checkout"]["path"] == "~/order-service"
    calls = [item["text"] for excerpt in bundle.payload["transcripts"]
             for item in excerpt["records"] if item.get("tool") == "Edit" and item["role"] ==
             "assistant"]  # fmt: skip
    assert calls
    assert all(json.loads(call)["file_path"] == "src/app/config.py" for call in calls[:1])
    maintenance = build_evidence(record, "repository_maintenance", private_dir=tmp_path / "m")
    assert maintenance.payload["runtime"]["cwd"] == "~/order-service"


def test_a_host_record_outside_any_home_is_unchanged(tmp_path: Path) -> None:
    record = open_run_source(RUNS / "retry-and-review", tmp_path / "rec")
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "private")
    texts = [item["text"] for excerpt in bundle.payload["transcripts"]
             for item in excerpt["records"]]  # fmt: skip
    assert '{"file_path": "src/app/config.py"}' in texts


def test_a_session_cwd_beside_a_relocated_checkout_gives_relative_paths_too() -> None:
    paths = PathRewriter("/work/checkout", WORKSPACE)
    call = '{"file_path":"/home/alice/projects/shop/src/app.py"}'
    assert paths.text(call) == '{"file_path":"src/app.py"}'
    assert paths.text("/work/checkout/src/app.py") == "src/app.py"
    assert paths.text("/home/alice/projects/other/a.py") == "~/projects/other/a.py"


def test_the_checkout_is_tried_before_a_cwd_inside_it() -> None:
    paths = PathRewriter(WORKSPACE, WORKSPACE + "/backend")
    assert paths.text(WORKSPACE + "/backend/src/app.py") == "backend/src/app.py"


def test_a_session_inspected_in_a_relocated_checkout_cites_checkout_relative_paths(
    tmp_path: Path,
) -> None:
    record = open_run_source(CLAUDE / "subagent-files.jsonl", tmp_path / "rec")
    checkout = Checkout(path=tmp_path / "copy", repository="forge:github.com/example/o",
                        commit="0" * 40)  # fmt: skip
    relocated = record.model_copy(update={"checkout": checkout})
    bundle = build_evidence(relocated, "repository_discovery", private_dir=tmp_path / "p")
    assert "~/order-service" not in json.dumps(bundle.payload["transcripts"])
    calls = [item["text"] for excerpt in bundle.payload["transcripts"]
             for item in excerpt["records"] if item.get("tool") == "Edit"
             and item["role"] == "assistant"]  # fmt: skip
    assert json.loads(calls[0])["file_path"] == "src/app/config.py"
