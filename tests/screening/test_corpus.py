"""The screening corpus: bad card text is refused or quarantined, ordinary advice passes.

The corpus (``corpus/bad*.jsonl``, ``corpus/good*.jsonl``: one file a topic) is ours: secrets
in our formats and in detect-secrets' providers, passwords in prose, planted instructions of
every family (in fifteen languages besides English, and disguised or encoded), frame
look-alikes, look-alike letters, source positions and card limits; and good advice that uses
the same words. ``benchmarks/screening_rates.py`` prints the same rates per family.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from active_memory.admission.preview import preview_card

CORPUS = Path(__file__).parent / "corpus"
FAMILIES = {
    "secret", "secret_entropy", "override", "forced_verdict", "exfiltration", "remote_code",
    "remote_fetch", "persistence", "shell_startup", "destructive", "decode_execute", "frame",
    "homoglyph", "position", "card_limit",
    # issue 28: other languages, disguises, encodings
    "override_i18n", "forced_verdict_i18n", "exfiltration_i18n", "encoded", "disguised",
    # issue 28: positions in every form, passwords on command lines and in prose, personal data
    "position_forms", "secret_cli", "secret_prose", "personal_data", "personal_phone",
}  # fmt: skip
# Every language of the phrase tables, in bad items and good look-alikes alike.
LANGUAGES = {
    "fr", "es", "pt", "de", "it", "tr", "pl", "ru", "zh", "ja", "ko", "hi", "nl", "vi", "id", "ar",
}  # fmt: skip


def _load(side: str) -> list[dict[str, str]]:
    return [
        json.loads(line)
        for path in sorted(CORPUS.glob(f"{side}*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


BAD, GOOD = _load("bad"), _load("good")


def _outcome(item: dict[str, str]) -> str:
    return preview_card(item.get("title"), item.get("recommendation")).outcome


def test_the_corpus_is_large_enough_and_covers_every_family() -> None:
    assert len(BAD) >= 150
    assert len(GOOD) >= 80
    assert {item["family"] for item in BAD} == FAMILIES


def test_every_bad_item_is_refused_or_quarantined() -> None:
    missed = [item for item in BAD if _outcome(item) == "clean"]
    assert missed == [], Counter(item["family"] for item in missed)


@pytest.mark.parametrize("item", GOOD, ids=lambda item: item["recommendation"][:40])
def test_no_good_item_is_refused(item: dict[str, str]) -> None:
    assert _outcome(item) != "refused"


@pytest.mark.parametrize(
    "family", ["secret_entropy", "remote_fetch", "shell_startup", "personal_phone"]
)
def test_weak_families_are_quarantined_rather_than_refused(family: str) -> None:
    outcomes = {_outcome(item) for item in BAD if item["family"] == family}
    assert outcomes == {"quarantined"}


@pytest.mark.parametrize(
    "origin",
    [
        "review-16", "heldout-16", "heldout-16b", "heldout-16c", "issue-28", "heldout-28",
        "issue-28-fixes", "heldout-28b", "s13-leet",
    ],
)  # fmt: skip
def test_items_from_the_review_and_written_before_running_land_on_their_side(origin: str) -> None:
    bad = [item for item in BAD if item.get("origin") == origin]
    good = [item for item in GOOD if item.get("origin") == origin]
    assert bad
    assert good
    assert [item for item in bad if _outcome(item) == "clean"] == []
    assert [item for item in good if _outcome(item) != "clean"] == []


def test_every_language_has_planted_instructions_and_look_alikes() -> None:
    for side in (BAD, GOOD):
        assert {item.get("language", "en") for item in side} >= LANGUAGES | {"en"}
    for family in ("override_i18n", "forced_verdict_i18n", "exfiltration_i18n"):
        languages = {item["language"] for item in BAD if item["family"] == family}
        assert languages >= LANGUAGES, family


def test_encoded_instructions_are_refused_as_encoded() -> None:
    for item in BAD:
        if item["family"] == "encoded":
            codes = preview_card(item.get("title"), item.get("recommendation")).codes
            assert "injection:encoded_instruction" in codes, item["recommendation"][:40]
