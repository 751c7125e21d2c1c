"""The memory service screens every publication: a leaked token cannot plant a card for every
agent of its repository, whatever the client claims it screened."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest

from active_memory.errors import ScreenRefused
from active_memory.screening.instructions import INJECTION_KINDS
from active_memory.screening.secrets import SECRET_KINDS
from active_memory.server import IssuedToken, RunningService
from active_memory.store.backend import PublicationControl
from active_memory.store.remote import RemoteBackend
from active_memory.store.wire import SCREENING_CODE_PATTERN, ScreenedWire
from factories import make_draft
from planted_cards import FAKE_GITHUB, OVERRIDE, PLANTED, SNAPSHOT, WEAK, new_lessons

Remote = Callable[[str], RemoteBackend]
Issue = Callable[..., IssuedToken]


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_post_publish_answers_422_screened_naming_codes_never_text(
    running: RunningService, issue: Issue, remote: Remote, name: str
) -> None:
    token = issue().token
    recommendation, code = PLANTED[name]
    batch = new_lessons(make_draft(), make_draft(recommendation=recommendation))
    answer = httpx.post(
        f"{running.url}/v1/publish",
        json={"publication": batch.model_dump(mode="json")},
        headers={"authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 422
    body = answer.json()
    assert body["error"] == "screened"
    assert body["screened"] == [{"id": batch.mutations[1].id, "codes": [code]}]
    assert recommendation not in answer.text
    assert FAKE_GITHUB not in answer.text
    assert remote(token).generation() == 0


def test_a_remote_publish_of_a_planted_card_raises_screen_refused(
    issue: Issue, remote: Remote
) -> None:
    backend = remote(issue().token)
    batch = new_lessons(make_draft(recommendation=OVERRIDE))
    with pytest.raises(ScreenRefused) as caught:
        backend.publish(batch)
    assert caught.value.drafts == ((batch.mutations[0].id, ("injection:override_instructions",)),)
    assert OVERRIDE not in str(caught.value)
    assert backend.snapshot(SNAPSHOT).lessons == ()


def test_the_service_ignores_a_clients_opt_out(issue: Issue, remote: Remote) -> None:
    backend = remote(issue().token)
    claimed = PublicationControl(screened_by="admission")
    with pytest.raises(ScreenRefused):
        backend.publish(new_lessons(make_draft(recommendation=WEAK)), claimed)
    assert backend.generation() == 0


def test_a_clean_publication_still_goes_through_the_service(issue: Issue, remote: Remote) -> None:
    backend = remote(issue().token)
    batch = new_lessons(make_draft())
    assert backend.publish(batch).revisions == {batch.mutations[0].id: 1}
    assert [lesson.id for lesson in backend.snapshot(SNAPSHOT).lessons] == [batch.mutations[0].id]


def test_every_code_the_screens_report_fits_the_wire() -> None:
    codes = [f"secret:{kind}" for kind in SECRET_KINDS]
    codes += [f"injection:{kind}" for kind in INJECTION_KINDS]
    assert [code for code in codes if not re.fullmatch(SCREENING_CODE_PATTERN, code)] == []
    assert ScreenedWire(id="lesson-x", codes=tuple(codes)).codes == tuple(codes)
