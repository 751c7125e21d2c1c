"""What the integration tests share: a real git checkout, a store, and the postmortem's answers.

Every framework test runs the same two-node graph (``implement``, a worker, then ``review``, a
verifier) twice over one checkout. Run 1 reads ``TARGET``; its repository discovery (scripted)
proposes a lesson about that file, which admission accepts and the store publishes. Run 2 reads
``TARGET`` twice in the implement conversation and ``README.md`` in the review one: the card is
delivered on the first read only, and run 2's repository maintenance sees that delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.providers.scripted import tool_call, tool_calls_response
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import AuthoredGraph
from active_memory.postmortem.entry import sequential_ids
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import by_labels, decisions

REPOSITORY = "forge:github.com/acme/widgets"
TARGET = "src/widgets/storage/blob.py"
README = "README.md"
SOURCE = '''class BlobWriter:
    """Buffers writes until flush() or close()."""

    def flush(self) -> None:
        pass
'''
TITLE = "Flush the BlobWriter before asserting"
RECOMMENDATION = (
    "Call BlobWriter.flush() before asserting on stored objects; writes stay buffered until "
    "flush() or close()."
)
ROLES = {"implement": "worker", "review": "verifier"}
EDGES = (("implement", "review"),)
LESSON_ID = sequential_ids()()


def make_checkout(root: Path) -> Path:
    """A git repository (GitPython) with ``TARGET`` and a README, committed; origin names
    github.com/acme/widgets (never fetched), so its key is ``REPOSITORY``."""
    project = root / "widgets"
    (project / TARGET).parent.mkdir(parents=True)
    (project / TARGET).write_text(SOURCE, encoding="utf-8")
    (project / README).write_text("# widgets\n", encoding="utf-8")
    repo = git.Repo.init(project)
    repo.create_remote("origin", "https://github.com/acme/widgets.git")
    repo.index.add([TARGET, README])
    author = git.Actor("Integration", "integration@example.invalid")
    repo.index.commit("widgets", author=author, committer=author)
    return project


@dataclass
class Bench:
    """One test's checkout and store, and the runs opened over them."""

    root: Path
    checkout: Path
    store: SqliteStore

    def open(self, run_id: str, graph: AuthoredGraph) -> ActiveRun:
        identity = RunIdentity(run_id, graph_hash=graph.hash)
        return open_run(
            identity, RuntimeConfig(), self.store, self.checkout,
            state_dir=self.root / "state" / run_id,
        )  # fmt: skip


def discovery(execution_id: str, citation: str | None = None) -> ModelResponse:
    """Repository discovery proposing the lesson about ``TARGET``, citing the execution (or
    ``citation``, such as a ``receipt:<seq>``)."""
    lesson = {
        "title": TITLE,
        "recommendation": RECOMMENDATION,
        "associations": {"files": [TARGET], "folders": [], "identifiers": [],
                         "keyword_groups": []},
        "node_id": "implement",
        "references": [citation or f"exec:{execution_id}", f"repository:{TARGET}"],
        "reason": "The implement node read the writer whose buffering the review relied on.",
        "repository_specific": True,
    }  # fmt: skip
    return answer_response({"lessons": [lesson]})


def read_target() -> ModelResponse:
    """Repository discovery opens ``TARGET`` with its tools: admission takes a citation only of
    a file the session read."""
    arguments = {"root": "repository", "path": TARGET, "offset": None, "limit": None}
    return tool_calls_response(tool_call("read_file", arguments, id="read-target"))


def first_answers(execution_id: str, citation: str | None = None) -> ScriptedProvider:
    """Run 1: no lessons to maintain; repository discovery reads ``TARGET``, then proposes the
    lesson (citing the execution, or ``citation``)."""
    return ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): answer_response({"lessons": []}),
                ("repository_discovery", 0, 1): read_target(),
                ("repository_discovery", 0, 2): discovery(execution_id, citation),
            }
        )
    )


def second_answers() -> ScriptedProvider:
    """Run 2: repository maintenance keeps the delivered lesson; discovery finds nothing."""
    return ScriptedProvider(
        by_labels(
            {
                ("repository_maintenance", 0, 1): decisions((LESSON_ID, "keep")),
                ("graph_discovery", 0, 1): answer_response({"lessons": []}),
                ("repository_discovery", 0, 1): answer_response({"lessons": []}),
            }
        )
    )


def lesson_ids() -> Callable[[], str]:
    """The ids the postmortem gives new lessons: ``LESSON_ID`` first."""
    return sequential_ids()


def shown(provider: ScriptedProvider, specialist: str) -> str:
    """What ``specialist`` was shown in its first request, as text."""
    request: ModelRequest = next(r for r in provider.requests if r.labels.specialist == specialist)
    return str(request.messages[0])


def delivered(provider: ScriptedProvider) -> bool:
    """Whether run 2's repository maintenance saw the lesson in the delivery manifest."""
    return f'"lesson":"{LESSON_ID}@1"' in shown(provider, "repository_maintenance")


def card_text() -> str:
    return f"[{LESSON_ID}@1] {TITLE}"
