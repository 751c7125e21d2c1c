"""Every library publication is screened: a planted card refuses the whole batch on every engine,
naming ids and codes, never the text; only the named opt-out skips the screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from engines import Store

from active_memory.errors import PublicationError, ScreenRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.store.backend import PublicationControl
from active_memory.store.sqlite import SqliteStore
from factories import make_draft
from planted_cards import FAKE_GITHUB, OVERRIDE, PLANTED, SNAPSHOT, WEAK, new_lessons


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_card_is_refused_by_publish_naming_id_and_codes(store: Store, name: str) -> None:
    recommendation, code = PLANTED[name]
    codes = (code,)
    batch = new_lessons(make_draft(), make_draft(recommendation=recommendation))
    planted_id = batch.mutations[1].id

    with pytest.raises(ScreenRefused) as caught:
        store.publish(batch)

    assert caught.value.drafts == ((planted_id, codes),)
    assert isinstance(caught.value, PublicationError)
    message = str(caught.value)
    assert planted_id in message
    assert codes[0] in message
    assert recommendation not in message
    assert FAKE_GITHUB not in message
    # The clean card of the same batch was not written either.
    assert (store.generation(), len(store.snapshot(SNAPSHOT).lessons)) == (0, 0)


def test_every_flagged_draft_is_named_in_batch_order(store: Store) -> None:
    batch = new_lessons(
        make_draft(recommendation=PLANTED["github_token"][0]),
        make_draft(),
        make_draft(recommendation=OVERRIDE),
    )
    with pytest.raises(ScreenRefused) as caught:
        store.publish(batch)
    first, _, third = (m.id for m in batch.mutations)
    assert caught.value.drafts == (
        (first, ("secret:github_token",)),
        (third, ("injection:override_instructions",)),
    )


def test_an_update_is_screened_like_a_create(store: Store) -> None:
    batch = new_lessons(make_draft())
    lesson_id = batch.mutations[0].id
    store.publish(batch)
    update = Mutation(
        op="upsert", id=lesson_id, expected_revision=1, draft=make_draft(recommendation=OVERRIDE)
    )
    with pytest.raises(ScreenRefused):
        store.publish(Publication(run_id="run-2", mutations=(update,)))
    assert store.get(lesson_id).revision == 1


def test_weak_signals_alone_refuse_a_publication_that_skips_admission(store: Store) -> None:
    with pytest.raises(ScreenRefused) as caught:
        store.publish(new_lessons(make_draft(recommendation=WEAK)))
    assert [codes for _, codes in caught.value.drafts] == [("injection:remote_fetch",)]
    assert store.generation() == 0


def test_a_clean_batch_and_a_retirement_still_publish(store: Store) -> None:
    batch = new_lessons(make_draft(), make_draft("Keep the fixtures small"))
    receipt = store.publish(batch)
    assert sorted(receipt.revisions.values()) == [1, 1]
    retire = Mutation(op="retire", id=batch.mutations[0].id, expected_revision=1)
    assert store.publish(Publication(run_id="run-2", mutations=(retire,))).retired == (
        batch.mutations[0].id,
    )


@pytest.mark.parametrize("screened_by", ["admission", "review"])
def test_the_named_opt_out_skips_the_screen(store: Store, screened_by: str) -> None:
    # Admission accepted it (or a person approved it) on the host's own path.
    control = PublicationControl(screened_by=screened_by)  # type: ignore[arg-type]
    receipt = store.publish(new_lessons(make_draft(recommendation=WEAK)), control)
    assert receipt.generation == 1


def test_screening_is_on_unless_named() -> None:
    assert PublicationControl().screened_by is None
    assert PublicationControl(deadline=1.0).screened_by is None


@pytest.mark.parametrize("claim", ["admision", "yes", True, ""])
def test_only_a_known_screen_is_an_opt_out(claim: object) -> None:
    # A typo or a flag from an untyped host must not switch the screen off silently.
    with pytest.raises(ValueError, match="screened_by"):
        PublicationControl(screened_by=claim)  # type: ignore[arg-type]


def test_memory_inits_publication_is_screened_and_leaves_no_receipt(tmp_path: Path) -> None:
    batch = new_lessons(make_draft(recommendation=OVERRIDE))
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        with pytest.raises(ScreenRefused):
            store.publish_once(batch, "session-1")
        assert store.init_receipt("session-1") is None
        assert store.generation() == 0


@pytest.mark.sqlite_only
def test_check_names_a_live_card_that_skipped_the_screen(store: SqliteStore) -> None:
    """A card written past the screen (a store from before it): recall would serve it, so the
    check names it with its codes, never its text."""
    batch = new_lessons(make_draft(recommendation=OVERRIDE))
    store.publish(batch, PublicationControl(screened_by="admission"))
    problems = store.check().problems
    assert problems == (
        f"stored lesson {batch.mutations[0].id!r} trips the admission screen "
        "(injection:override_instructions); retire it or publish a corrected revision",
    )
    assert OVERRIDE not in str(problems)


@pytest.mark.sqlite_only
def test_check_accepts_a_card_a_person_approved_for_its_weak_signals(store: SqliteStore) -> None:
    """Approval publishes a quarantined card with the weak signal it was held for (strong ones
    are screened again): the check must not name it, or every approval fails `store check`."""
    approved = new_lessons(make_draft(recommendation=WEAK))
    store.publish(approved, PublicationControl(screened_by="review"))
    assert store.check().problems == ()
