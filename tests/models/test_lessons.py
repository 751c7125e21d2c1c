"""Card limits: one byte over is rejected, exactly at the limit is accepted (UTF-8 counted);
the models' parsing, error paths and serialisation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.errors import LessonValidationError
from active_memory.limits import BROAD_WORDS as BROAD, LIMITS
from active_memory.models.changes import Decision, Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import (
    Card,
    Evidence,
    GraphScope,
    Lesson,
    LessonDraft,
    RepositoryScope,
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


def test_lesson_round_trips_through_its_json_form() -> None:
    lesson = Lesson.from_draft(new_lesson_id(), 3, draft())
    assert Lesson.parse(lesson.model_dump(mode="json")) == lesson
    graph = Lesson.from_draft(
        new_lesson_id(), 1, draft(scope=GraphScope(graph_hash=HASH, node_id="w", repository=REPO))
    )
    assert Lesson.parse(graph.model_dump(mode="json")) == graph
    assert Lesson.parse_json(graph.model_dump_json()) == graph


def test_a_dumped_scope_carries_its_kind_and_every_field() -> None:
    dumped = draft().model_dump(mode="json")["scope"]
    assert dumped == {
        "kind": "repository",
        "repository": REPO,
        "files": ["src/app.py"],
        "folders": [],
        "identifiers": [],
        "keyword_groups": [],
    }
    graph = GraphScope(graph_hash=HASH, node_id="w").model_dump(mode="json")
    assert graph == {"kind": "graph", "graph_hash": HASH, "node_id": "w", "repository": None}


def test_the_scope_union_is_chosen_by_kind_from_a_dict() -> None:
    data = draft().model_dump(mode="json")
    assert isinstance(LessonDraft.parse(data).scope, RepositoryScope)
    data["scope"] = {"kind": "graph", "graph_hash": HASH, "node_id": "review"}
    scope = LessonDraft.parse(data).scope
    assert scope == GraphScope(graph_hash=HASH, node_id="review")
    assert scope.kind == "graph"


@pytest.mark.parametrize(
    ("scope", "problem"),
    [
        ({"repository": REPO, "files": ["a.py"]}, "is required"),
        ({"kind": "folder", "repository": REPO}, "'folder' must be 'repository' or 'graph'"),
    ],
)
def test_a_scope_without_a_known_kind_names_the_kind(scope: object, problem: str) -> None:
    data = {**draft().model_dump(mode="json"), "scope": scope}
    with pytest.raises(LessonValidationError) as info:
        LessonDraft.parse(data)
    assert (info.value.field, info.value.problem) == ("scope.kind", problem)


def test_a_scope_kind_is_fixed_by_its_class() -> None:
    with pytest.raises(LessonValidationError) as info:
        RepositoryScope.parse({"kind": "graph", "repository": REPO, "files": ["a.py"]})
    assert info.value.field == "scope.kind"


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        # The union's tag ("repository") is not part of the path, even where a field shares it.
        (("scope", "repository"), "scope.repository", "credential-free"),
        (("scope", "files"), "scope.files[1]", "must be a literal path, not a glob"),
        (("scope", "keyword_groups"), "scope.keyword_groups[0]", "too broad"),
        (("evidence", "references"), "evidence.references[0]", "must be exec:<id>"),
        (("evidence", "run_id"), "evidence.run_id", "must be a string"),
    ],
)
def test_a_nested_problem_names_the_whole_field_path(
    change: tuple[str, str], field: str, rule: str
) -> None:
    values = {
        "repository": "https://tok@github.com/a/b",
        "files": ["src/app.py", "src/*.py"],
        "keyword_groups": [["the", "schema"]],
        "references": ["nonsense"],
        "run_id": 7,
    }
    data = Lesson.from_draft(new_lesson_id(), 1, draft()).model_dump(mode="json")
    part, key = change
    data[part][key] = values[key]
    with pytest.raises(LessonValidationError) as info:
        Lesson.parse(data)
    assert info.value.field == field
    assert rule in info.value.problem


def test_a_graph_scope_problem_is_named_without_the_union_tag() -> None:
    data = draft(scope=GraphScope(graph_hash=HASH, node_id="w")).model_dump(mode="json")
    data["scope"]["graph_hash"] = "A" * 64
    with pytest.raises(LessonValidationError) as info:
        LessonDraft.parse(data)
    assert info.value.field == "scope.graph_hash"


def test_problems_inside_changes_name_the_path_from_the_change() -> None:
    lesson_id = new_lesson_id()
    replacement = {**draft().model_dump(mode="json"), "title": "two\nlines"}
    with pytest.raises(LessonValidationError) as info:
        Decision.parse({"id": lesson_id, "action": "adapt", "reason": "r",
                        "replacement": replacement})  # fmt: skip
    assert info.value.field == "decision.replacement.title"
    bad = draft().model_dump(mode="json")
    bad["scope"]["files"] = ["src/app.py", "../up.py"]
    mutations = [
        {"op": "retire", "id": new_lesson_id(), "expected_revision": 1},
        {"op": "upsert", "id": lesson_id, "expected_revision": 0, "draft": bad},
    ]
    with pytest.raises(LessonValidationError) as info:
        Publication.parse({"run_id": "run-1", "mutations": mutations})
    assert info.value.field == "publication.mutations[1].draft.scope.files[1]"


def test_unknown_fields_are_rejected_with_the_allowed_ones_listed() -> None:
    data = draft().model_dump(mode="json")
    data["priority"] = "high"
    with pytest.raises(LessonValidationError) as info:
        LessonDraft.parse(data)
    assert info.value.field == "priority"
    assert info.value.problem == (
        "is not a known field; allowed: ['evidence', 'recommendation', 'scope', 'title']"
    )


def test_missing_fields_are_named() -> None:
    data = draft().model_dump(mode="json")
    del data["evidence"]["reason"]
    with pytest.raises(LessonValidationError) as info:
        LessonDraft.parse(data)
    assert (info.value.field, info.value.problem) == ("evidence.reason", "is required")


def test_types_are_not_coerced() -> None:
    data = Lesson.from_draft(new_lesson_id(), 1, draft()).model_dump(mode="json")
    for key, value in (("revision", "1"), ("revision", True), ("title", 5)):
        with pytest.raises(LessonValidationError) as info:
            Lesson.parse({**data, key: value})
        assert info.value.field == key


def test_lists_from_json_become_tuples_but_other_collections_are_refused() -> None:
    scope = RepositoryScope.parse({"repository": REPO, "files": ["a.py"]})
    assert scope.files == ("a.py",)
    with pytest.raises(LessonValidationError) as info:
        RepositoryScope(repository=REPO, files={"a.py"})  # type: ignore[arg-type]
    assert info.value.field == "scope.files"
    assert "must be a list" in info.value.problem


def test_models_are_frozen() -> None:
    lesson = draft()
    with pytest.raises(Exception, match="frozen"):
        lesson.title = "Other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("bad", "described"),
    [(5, "a number"), ([1], "an array"), ("text", "a string"), (None, "null"), (True, "a boolean")],
)
@pytest.mark.parametrize("field", ["scope", "evidence"])
def test_a_nested_field_that_is_not_an_object_is_named(
    field: str, bad: object, described: str
) -> None:
    data = Lesson.from_draft(new_lesson_id(), 1, draft()).model_dump(mode="json")
    data[field] = bad
    with pytest.raises(LessonValidationError) as info:
        Lesson.parse(data)
    assert (info.value.field, info.value.problem) == (field, f"must be an object, got {described}")


@pytest.mark.parametrize("bad", [5, [1], "text", None])
def test_parsing_something_that_is_not_an_object_is_a_validation_error(bad: Any) -> None:
    for model, field in (
        (Lesson, "Lesson"),
        (LessonDraft, "LessonDraft"),
        (Evidence, "evidence"),
        (RepositoryScope, "scope"),
    ):
        with pytest.raises(LessonValidationError) as info:
            model.parse(bad)
        assert info.value.field == field
        assert info.value.problem.startswith("must be an object")


def test_invalid_json_text_is_a_validation_error() -> None:
    with pytest.raises(LessonValidationError, match="is not valid JSON"):
        Lesson.parse_json('{"id": ')


def test_the_card_is_the_draft_without_its_evidence() -> None:
    lesson = draft()
    assert lesson.card == Card(
        scope=lesson.scope, title=lesson.title, recommendation=lesson.recommendation
    )
    assert "evidence" not in lesson.card.model_dump()
    assert lesson.card.draft(lesson.evidence) == lesson


def test_a_lesson_keeps_its_key_and_its_draft() -> None:
    lesson_id = new_lesson_id()
    lesson = Lesson.from_draft(lesson_id, 4, draft())
    assert lesson.key == f"{lesson_id}@4"
    assert lesson.draft == draft()


def test_adapt_decision_requires_a_replacement_and_others_forbid_it() -> None:
    lesson_id = new_lesson_id()
    Decision(id=lesson_id, action="adapt", reason="stale path", replacement=draft())
    Decision(id=lesson_id, action="keep", reason="still true")
    with pytest.raises(LessonValidationError, match="replacement"):
        Decision(id=lesson_id, action="adapt", reason="stale path")
    with pytest.raises(LessonValidationError, match="replacement"):
        Decision(id=lesson_id, action="retire", reason="obsolete", replacement=draft())
    with pytest.raises(LessonValidationError) as info:
        Decision(id=lesson_id, action="drop", reason="obsolete")  # type: ignore[arg-type]
    assert info.value.field == "decision.action"


def test_mutations_and_publications_are_checked() -> None:
    lesson_id = new_lesson_id()
    Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft())
    Mutation(op="retire", id=lesson_id, expected_revision=2)
    with pytest.raises(LessonValidationError, match=r"^mutation: a retire names"):
        Mutation(op="retire", id=lesson_id, expected_revision=0)
    with pytest.raises(LessonValidationError, match=r"^mutation\.draft: an upsert needs a draft"):
        Mutation(op="upsert", id=lesson_id, expected_revision=1)
    with pytest.raises(
        LessonValidationError, match=r"^mutation\.expected_revision: must be 0 or more"
    ):
        Mutation(op="upsert", id=lesson_id, expected_revision=-1, draft=draft())
    with pytest.raises(LessonValidationError, match=r"^publication\.mutations: repeats"):
        Publication(
            run_id="run-1",
            mutations=(
                Mutation(op="retire", id=lesson_id, expected_revision=1),
                Mutation(op="retire", id=lesson_id, expected_revision=1),
            ),
        )


# -- round trip: any valid lesson dumps to JSON and parses back equal ---------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=2, max_size=12)
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=24
).filter(lambda text: text.strip() and "\x85" not in text)
_PATH = st.lists(_WORD, min_size=1, max_size=3, unique=True).map("/".join)
_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{2,15}", fullmatch=True)
_GROUP = st.lists(_WORD.filter(lambda word: word not in BROAD), min_size=2, max_size=4,
                  unique=True).map(tuple)  # fmt: skip
_REPOSITORY_SCOPE = st.builds(
    RepositoryScope,
    repository=st.just(REPO),
    files=st.lists(_PATH, min_size=1, max_size=3, unique=True).map(tuple),
    folders=st.lists(_PATH, max_size=2, unique=True).map(tuple),
    identifiers=st.lists(_IDENT, max_size=2, unique=True).map(tuple),
    keyword_groups=st.lists(_GROUP, max_size=2).map(tuple),
)
_GRAPH_SCOPE = st.builds(
    GraphScope,
    graph_hash=st.just(HASH),
    node_id=_TEXT,
    repository=st.sampled_from([None, REPO]),
)
_EVIDENCE = st.builds(
    Evidence,
    run_id=_TEXT,
    references=st.lists(_WORD.map("exec:".__add__), min_size=1, max_size=3, unique=True).map(tuple),
    reason=_TEXT,
    source_commit=st.sampled_from([None, "0" * 40]),
)
_LESSON = st.builds(
    Lesson,
    id=st.just(new_lesson_id(now_ms=1)),
    revision=st.integers(min_value=1, max_value=10**6),
    scope=st.one_of(_REPOSITORY_SCOPE, _GRAPH_SCOPE),
    title=_TEXT,
    recommendation=_TEXT,
    evidence=_EVIDENCE,
)


@settings(max_examples=60, deadline=None)
@given(_LESSON)
def test_any_lesson_round_trips_through_json(lesson: Lesson) -> None:
    assert Lesson.parse(json.loads(json.dumps(lesson.model_dump(mode="json")))) == lesson
    assert Lesson.parse_json(lesson.model_dump_json()) == lesson
