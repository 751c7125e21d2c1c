"""Run in a subprocess by test_real_httpx.py: RemoteBackend through the real ``httpx`` (no
alias), and refused on its own ``http.client`` exchange.

Usage: ``python real_httpx_client.py URL TOKEN``; prints one JSON object of what happened.
"""

from __future__ import annotations

import json
import sys

import httpx

from active_memory.errors import RevisionConflict, StoreUnavailable
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.remote import RemoteBackend
from factories import REPOSITORY, make_draft


def main(url: str, token: str) -> dict[str, object]:
    outcome: dict[str, object] = {"httpx": httpx.__name__, "httpx_file": httpx.__file__}
    lesson_id = new_lesson_id()
    create = Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=make_draft())
    # Through httpx, as a host behind a proxy from its environment talks to the service.
    with RemoteBackend(url, token=token, timeout_s=10, transport=httpx.HTTPTransport()) as backend:
        receipt = backend.publish(Publication(run_id="real", mutations=(create,)))
        outcome["published"] = receipt.revisions[lesson_id]
        seen = backend.snapshot(SnapshotRequest(RunIdentity("real", REPOSITORY)))
        outcome["snapshot"] = [lesson.id for lesson in seen.lessons] == [lesson_id]
        try:
            backend.publish(Publication(run_id="real", mutations=(create,)))
        except RevisionConflict as conflict:
            outcome["conflict"] = [(m.id, m.expected, m.found) for m in conflict.mismatches]
    with RemoteBackend(url, token=token[:-4] + "AAAA", timeout_s=10) as wrong:
        try:
            wrong.generation()
        except StoreUnavailable as error:
            outcome["unauthorized"] = str(error)
    return outcome


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
