"""``active-memory serve`` as a real process: hooks reach it, it reloads, it stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from active_memory.hooks.commands import curl_command
from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from recall.kit import (
    lesson,
    lesson_id,
    payload_in,
    seed_store,
    widgets_checkout,
    widgets_lessons,
)

CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip


CURL_BUDGET_S = 0.25  # curl_command's --max-time


def answered(command: str, payload: bytes, expected: str, *, reloading: bool = False) -> str:
    """The hook's answer once it holds ``expected`` (asked again for up to 10 s). The curl hook
    answers ``{}`` when its time budget runs out (failing open), which a loaded machine can
    cause on any single call: such a call is asked again. Any other answer without ``expected``
    is returned at once, so a broker that does not listen (a quick ``{}``) or answers without
    the card fails the test, unless ``reloading``: until the broker sees the store's new
    generation it answers from the old one."""
    deadline = time.monotonic() + 10
    while True:
        started = time.monotonic()
        answer = json.dumps(hook(command, payload))
        if expected in answer or time.monotonic() >= deadline:
            return answer
        ran_out = answer == "{}" and time.monotonic() - started >= CURL_BUDGET_S
        if not (ran_out or reloading):
            return answer
        time.sleep(0.05)


def hook(command: str, payload: bytes) -> object:
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                          timeout=20, env=CLEAN_ENV)  # fmt: skip
    assert done.returncode == 0
    return json.loads(done.stdout)


def test_serve_answers_hooks_reloads_and_stops(tmp_path: Path) -> None:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    script = Path(sys.executable).with_name("active-memory")
    process = subprocess.Popen(
        [str(script), "serve", "--repository", str(workspace), "--store", str(store),
         "--poll", "0.05", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=CLEAN_ENV,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = []
        while not lines or lines[-1] != "}":
            line = process.stdout.readline().decode()
            assert line, process.stderr.read() if process.stderr else ""
            lines.append(line.rstrip("\n"))
        state = json.loads("\n".join(lines))
        assert (state["repository"], state["generation"]) == ("forge:github.com/acme/widgets", 1)
        command = curl_command("codex", state["ticket"])
        payload = payload_in("codex/apply_patch.json", workspace)
        first = answered(command, payload, f"[{lesson_id(1)}@1]")
        assert f"[{lesson_id(1)}@1]" in first
        with SqliteStore(store) as writer:
            update = lesson(1, files=["src/widgets/config.py"], title="Config loads eagerly")
            writer.publish(
                Publication(
                    run_id="run-2",
                    mutations=(
                        Mutation(
                            op="upsert", id=update.id, expected_revision=1, draft=update.draft
                        ),
                    ),
                )
            )
        second = answered(command, payload, f"{lesson_id(1)}@2", reloading=True)
        assert f"[{lesson_id(1)}@2] Config loads eagerly" in second
        assert Path(state["ticket"]).exists()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
    assert code == 0
    assert not any(path.suffix == ".json" for path in (store.parent / "serve").iterdir())
    assert hook(command, payload) == {}
