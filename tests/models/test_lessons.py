"""Card limits: one byte over is rejected, exactly at the limit is accepted (UTF-8 counted)."""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.errors import LessonValidationError
from active_memory.limits import LIMITS
from active_memory.models.changes import Decision, Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import (
    Evidence,
    GraphScope,
    Lesson,
    LessonDraft,
    RepositoryScope,
    scope_from_dict,
)
from active_memory.repository import local_repository_key, repository_key_from_remote

REPO = "forge:example.com/acme/app"
HASH = "a" * 64


def evidence(**overrides: Any) -> Evidence:
    fields: dict[str, Any] = {"run_id": "run-1", "references": ("exec:e1",), "reason": "seen"}
    fields.update(overrides)
    return Evidence(**fields)


def draft(**overrides: Any) -> LessonDraft:
    fields: dict[str, Any] = {
        "scope": RepositoryScope(repository=REPO, files=("src/app.py",)),
        "title": "Set APP_ENV before running the config tests",
        "recommendation": "Export APP_ENV=test; the loader reads it at import time.",
        "evidence": evidence(),
    }
    fields.update(overrides)
    return LessonDraft(**fields)


def text_of(size: int, unit: str = "a") -> str:
    """A string of exactly ``size`` UTF-8 bytes built from ``unit`` (padded with ASCII)."""
    width = len(unit.encode())
    return unit * (size // width) + "a" * (size % width)


# (field, limit, builder) for every byte-limited one-line text field.
TEXT_LIMITS = [
    ("title", LIMITS.title_bytes, lambda value: draft(title=value)),
    ("recommendation", LIMITS.recommendation_bytes, lambda value: draft(recommendation=value)),
    ("evidence.reason", LIMITS.reason_bytes, lambda value: evidence(reason=value)),
    (
        "scope.node_id",
        LIMITS.node_id_bytes,
        lambda value: GraphScope(graph_hash=HASH, node_id=value),
    ),
    (
        "scope.files[0]",
        LIMITS.path_bytes,
        lambda value: RepositoryScope(repository=REPO, files=(value,)),
    ),
    (
        "scope.folders[0]",
        LIMITS.path_bytes,
        lambda value: RepositoryScope(repository=REPO, folders=(value,)),
    ),
]


@pytest.mark.parametrize("unit", ["a", "é", "€", "🦀"], ids=["ascii", "2-byte", "3-byte", "4-byte"])
@pytest.mark.parametrize(("field", "limit", "build"), TEXT_LIMITS, ids=[t[0] for t in TEXT_LIMITS])
def test_text_field_accepts_exactly_the_limit_and_rejects_one_byte_over(
    field: str, limit: int, build: Any, unit: str
) -> None:
    at_limit = text_of(limit, unit)
    assert len(at_limit.encode()) == limit
    build(at_limit)
    with pytest.raises(LessonValidationError) as info:
        build(at_limit + "a")
    assert info.value.field == field
    assert str(limit) in str(info.value)


# Identifier-like fields, built from a byte size (their shapes constrain the characters).
IDENTIFIER_LIMITS = [
    (
        "scope.repository",
        LIMITS.repository_key_bytes,
        lambda size: RepositoryScope(repository="repo:" + "a" * (size - 5), files=("a.py",)),
    ),
    ("evidence.run_id", LIMITS.run_id_bytes, lambda size: evidence(run_id=text_of(size, "é"))),
    (
        "evidence.references[0]",
        LIMITS.reference_bytes,
        lambda size: evidence(references=("exec:" + text_of(size - 5, "€"),)),
    ),
]


@pytest.mark.parametrize(
    ("field", "limit", "build"), IDENTIFIER_LIMITS, ids=[t[0] for t in IDENTIFIER_LIMITS]
)
def test_identifier_field_accepts_exactly_the_limit_and_rejects_one_byte_over(
    field: str, limit: int, build: Any
) -> None:
    assert (LIMITS.repository_key_bytes, LIMITS.run_id_bytes, LIMITS.reference_bytes) == (
        256,
        128,
        300,
    )
    build(limit)
    with pytest.raises(LessonValidationError) as info:
        build(limit + 1)
    assert info.value.field == field
    assert f"is {limit + 1} UTF-8 bytes; the limit is {limit}" in str(info.value)


def test_multibyte_character_crossing_the_limit_is_rejected_even_when_chars_fit() -> None:
    title = "a" * (LIMITS.title_bytes - 1) + "é"  # 95 chars... 97 bytes
    assert len(title) <= LIMITS.title_bytes < len(title.encode())
    with pytest.raises(LessonValidationError, match="97 UTF-8 bytes; the limit is 96"):
        draft(title=title)


@pytest.mark.parametrize("bad", ["two\nlines", "tab\there", "nul\x00", "sep\u2028x", "  "])
def test_text_fields_must_be_one_nonempty_line_without_control_characters(bad: str) -> None:
    with pytest.raises(LessonValidationError) as info:
        draft(title=bad)
    assert info.value.field == "title"


@pytest.mark.parametrize(
    ("name", "limit", "make"),
    [
        ("files", LIMITS.files, lambda i: f"src/f{i}.py"),
        ("folders", LIMITS.folders, lambda i: f"pkg{i}"),
        ("identifiers", LIMITS.identifiers, lambda i: f"name_{i}"),
        ("keyword_groups", LIMITS.keyword_groups, lambda i: (f"alpha{i}", f"beta{i}")),
    ],
)
def test_association_counts_accept_the_limit_and_reject_one_more(
    name: str, limit: int, make: Any
) -> None:
    RepositoryScope(repository=REPO, **{name: tuple(make(i) for i in range(limit))})
    with pytest.raises(LessonValidationError) as info:
        RepositoryScope(repository=REPO, **{name: tuple(make(i) for i in range(limit + 1))})
    assert info.value.field == f"scope.{name}"
    assert str(limit) in str(info.value)


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "src/../secret",
        "./src/app.py",
        "src//app.py",
        "src/*.py",
        "src/app?.py",
        "src\\app.py",
        "C:/app.py",
        "src/",
    ],
)
def test_paths_must_be_literal_root_relative_and_normalised(path: str) -> None:
    with pytest.raises(LessonValidationError) as info:
        RepositoryScope(repository=REPO, files=(path,))
    assert info.value.field == "scope.files[0]"


def test_identifier_length_bounds_are_inclusive() -> None:
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    RepositoryScope(repository=REPO, identifiers=("a" * low, "b" * high))
    for bad in ("a" * (low - 1), "b" * (high + 1), "has-dash", "dotted.name", "é_name"):
        with pytest.raises(LessonValidationError, match=r"scope\.identifiers\[0\]"):
            RepositoryScope(repository=REPO, identifiers=(bad,))


def test_identifiers_must_be_unique() -> None:
    with pytest.raises(LessonValidationError, match="repeats 'configure_bedrock'"):
        RepositoryScope(repository=REPO, identifiers=("configure_bedrock", "configure_bedrock"))


def test_keyword_groups_need_two_to_four_unique_specific_terms() -> None:
    RepositoryScope(repository=REPO, keyword_groups=(("bedrock", "region"),))
    RepositoryScope(repository=REPO, keyword_groups=(("aa", "b" * 48, "cc", "dd"),))
    bad_groups = [
        ("bedrock",),  # one term
        ("a1", "b1", "c1", "d1", "e1"),  # five terms
        ("bedrock", "bedrock"),  # repeated
        ("bedrock", "x"),  # term too short
        ("bedrock", "c" * 49),  # term too long
        ("Bedrock", "region"),  # uppercase
        ("bedrock", "the"),  # broad word
        ("repository", "region"),  # broad word
    ]
    for group in bad_groups:
        with pytest.raises(LessonValidationError, match=r"scope\.keyword_groups\[0\]"):
            RepositoryScope(repository=REPO, keyword_groups=(group,))


def test_repository_scope_needs_at_least_one_association() -> None:
    with pytest.raises(LessonValidationError, match="at least one file, folder"):
        RepositoryScope(repository=REPO)


@pytest.mark.parametrize(
    "key",
    [
        "https://user:tok@github.com/a/b",
        "forge:user@github.com/a/b",
        "github.com/a/b",
        "local:xyz",
        "forge:github.com/a/../b",
        "forge:github.com/a b",
    ],
)
def test_repository_keys_must_be_credential_free_identities(key: str) -> None:
    with pytest.raises(LessonValidationError, match="credential-free"):
        RepositoryScope(repository=key, files=("a.py",))


@pytest.mark.parametrize(
    ("remote", "key"),
    [
        ("https://user:s3cr3t@github.com/Acme/App.git", "forge:github.com/Acme/App"),
        ("git@github.com:acme/app.git", "forge:github.com/acme/app"),
        (
            "ssh://git@gitlab.example.com:2222/group/sub/app",
            "forge:gitlab.example.com/group/sub/app",
        ),
        ("https://GitHub.com/acme/app/", "forge:github.com/acme/app"),
    ],
)
def test_remote_urls_become_keys_without_credentials(remote: str, key: str) -> None:
    assert repository_key_from_remote(remote) == key


def test_local_repository_key_is_stable_and_valid(tmp_path: Any) -> None:
    key = local_repository_key(tmp_path)
    assert key == local_repository_key(str(tmp_path) + "/.")
    RepositoryScope(repository=key, files=("a.py",))


def test_graph_hash_must_be_64_lowercase_hex() -> None:
    GraphScope(graph_hash=HASH, node_id="worker")
    for bad in ("A" * 64, "a" * 63, "a" * 65, "g" * 64):
        with pytest.raises(LessonValidationError, match=r"scope\.graph_hash"):
            GraphScope(graph_hash=bad, node_id="worker")


def test_evidence_needs_one_to_eight_unique_wellformed_references() -> None:
    evidence(references=tuple(f"receipt:{i}" for i in range(8)))
    for refs in (
        (),
        tuple(f"receipt:{i}" for i in range(9)),
        ("exec:e1", "exec:e1"),
        ("nonsense",),
        ("exec:",),
    ):
        with pytest.raises(LessonValidationError, match=r"evidence\.references"):
            evidence(references=refs)


def test_lesson_ids_are_ulids_and_sort_by_time() -> None:
    first, second = new_lesson_id(now_ms=1), new_lesson_id(now_ms=2)
    assert first < second
    Lesson.from_draft(first, 1, draft())
    with pytest.raises(LessonValidationError, match="lesson-<ULID>"):
        Lesson.from_draft("lesson-1", 1, draft())


def test_revisions_start_at_one() -> None:
    with pytest.raises(LessonValidationError, match="revisions start at 1"):
        Lesson.from_draft(new_lesson_id(), 0, draft())


def test_lesson_round_trips_through_its_dict_form() -> None:
    lesson = Lesson.from_draft(new_lesson_id(), 3, draft())
    assert Lesson.from_dict(lesson.to_dict()) == lesson
    graph = Lesson.from_draft(
        new_lesson_id(), 1, draft(scope=GraphScope(graph_hash=HASH, node_id="w", repository=REPO))
    )
    assert Lesson.from_dict(graph.to_dict()) == graph


def test_unknown_fields_are_rejected_with_the_allowed_ones_listed() -> None:
    data = draft().to_dict()
    data["priority"] = "high"
    with pytest.raises(LessonValidationError, match=r"unknown field\(s\) \['priority'\]"):
        LessonDraft.from_dict(data)


@pytest.mark.parametrize(
    ("bad", "described"),
    [(5, "a number"), ([1], "an array"), ("text", "a string"), (None, "null"), (True, "a boolean")],
)
@pytest.mark.parametrize("field", ["scope", "evidence"])
def test_a_nested_field_that_is_not_an_object_is_named(
    field: str, bad: object, described: str
) -> None:
    data = Lesson.from_draft(new_lesson_id(), 1, draft()).to_dict()
    data[field] = bad
    with pytest.raises(LessonValidationError) as info:
        Lesson.from_dict(data)
    assert (info.value.field, info.value.problem) == (field, f"must be an object, got {described}")


@pytest.mark.parametrize("bad", [5, [1], "text", None])
def test_from_dict_of_something_that_is_not_an_object_is_a_validation_error(bad: Any) -> None:
    for parse, field in (
        (Lesson.from_dict, "lesson"),
        (LessonDraft.from_dict, "lesson"),
        (Evidence.from_dict, "evidence"),
        (scope_from_dict, "scope"),
    ):
        with pytest.raises(LessonValidationError) as info:
            parse(bad)
        assert info.value.field == field
        assert info.value.problem.startswith("must be an object")


def test_card_dict_excludes_evidence() -> None:
    assert "evidence" not in draft().card_dict()


def test_adapt_decision_requires_a_replacement_and_others_forbid_it() -> None:
    lesson_id = new_lesson_id()
    Decision(id=lesson_id, action="adapt", reason="stale path", replacement=draft())
    Decision(id=lesson_id, action="keep", reason="still true")
    with pytest.raises(LessonValidationError, match="replacement"):
        Decision(id=lesson_id, action="adapt", reason="stale path")
    with pytest.raises(LessonValidationError, match="replacement"):
        Decision(id=lesson_id, action="retire", reason="obsolete", replacement=draft())


def test_mutations_and_publications_are_checked() -> None:
    lesson_id = new_lesson_id()
    Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft())
    Mutation(op="retire", id=lesson_id, expected_revision=2)
    with pytest.raises(LessonValidationError):
        Mutation(op="retire", id=lesson_id, expected_revision=0)
    with pytest.raises(LessonValidationError):
        Mutation(op="upsert", id=lesson_id, expected_revision=1)
    with pytest.raises(LessonValidationError, match="repeats"):
        Publication(
            run_id="run-1",
            mutations=(
                Mutation(op="retire", id=lesson_id, expected_revision=1),
                Mutation(op="retire", id=lesson_id, expected_revision=1),
            ),
        )
