from __future__ import annotations

from active_memory.recall.index import (
    SCORE_FILE,
    SCORE_FOLDER,
    SCORE_IDENTIFIER,
    SCORE_KEYWORDS,
    RecallIndex,
)
from active_memory.recall.signals import Signals, ToolCall, extract_signals
from recall.kit import GRAPH, ROOT, graph_lesson, lesson, lesson_id


def signals(
    paths: tuple[str, ...] = (), identifiers: set[str] = frozenset(), words: set[str] = frozenset()
) -> Signals:
    return Signals(paths, frozenset(identifiers), frozenset(words))


def scored(index: RecallIndex, found: Signals) -> list[tuple[str, int, str]]:
    return [(m.lesson.id, m.score, m.reason) for m in index.match(found)]


def test_each_tier_scores_as_specified() -> None:
    index = RecallIndex(
        [
            lesson(1, files=["src/app.py"]),
            lesson(2, folders=["src"]),
            lesson(3, identifiers=["configure_bedrock"]),
            lesson(4, keyword_groups=[["bedrock", "region"]]),
        ]
    )
    found = signals(("src/app.py",), {"configure_bedrock"}, {"bedrock", "region"})
    assert scored(index, found) == [
        (lesson_id(1), SCORE_FILE, "file src/app.py"),
        (lesson_id(2), SCORE_FOLDER, "folder src"),
        (lesson_id(3), SCORE_IDENTIFIER, "identifier configure_bedrock"),
        (lesson_id(4), SCORE_KEYWORDS, "keywords bedrock+region"),
    ]
    assert (SCORE_FILE, SCORE_FOLDER, SCORE_IDENTIFIER, SCORE_KEYWORDS) == (1000, 800, 700, 500)


def test_a_card_gets_its_strongest_single_match() -> None:
    card = lesson(1, files=["src/app.py"], folders=["src"], identifiers=["make_app"])
    found = signals(("src/app.py",), {"make_app"})
    assert scored(RecallIndex([card]), found) == [(lesson_id(1), 1000, "file src/app.py")]


def test_several_weaker_matches_do_not_add_up() -> None:
    strong = lesson(1, files=["src/app.py"])
    many = lesson(2, folders=["src", "src/lib"], identifiers=["alpha", "beta", "gamma"])
    found = signals(("src/app.py", "src/lib/x.py"), {"alpha", "beta", "gamma"})
    assert [score for _, score, _ in scored(RecallIndex([many, strong]), found)] == [1000, 800]


def test_repeated_words_and_extra_groups_add_nothing() -> None:
    card = lesson(1, keyword_groups=[["bedrock", "region"], ["region", "fallback"]])
    call = ToolCall("Bash", {"command": "bedrock region " * 50 + "fallback"}, None)
    matches = RecallIndex([card]).match(extract_signals(call, ROOT))
    assert [match.score for match in matches] == [SCORE_KEYWORDS]


def test_ties_are_ordered_by_id() -> None:
    cards = [lesson(n, folders=["src"]) for n in (3, 1, 2)]
    assert [m for m, _, _ in scored(RecallIndex(cards), signals(("src/x.py",)))] == [
        lesson_id(1),
        lesson_id(2),
        lesson_id(3),
    ]


def test_folders_are_component_aware() -> None:
    index = RecallIndex([lesson(1, folders=["src/a"])])
    assert scored(index, signals(("src/ab/x.py",))) == []
    assert scored(index, signals(("src/ab",))) == []
    assert scored(index, signals(("src/a/x.py",))) == [(lesson_id(1), 800, "folder src/a")]
    assert scored(index, signals(("src/a",))) == [(lesson_id(1), 800, "folder src/a")]
    assert scored(index, signals(("src",))) == []


def test_files_match_only_exactly() -> None:
    index = RecallIndex([lesson(1, files=["src/app.py"])])
    assert scored(index, signals(("src/app.py.bak", "app.py", "src"))) == []


def test_identifiers_match_whole_and_case_sensitively() -> None:
    index = RecallIndex([lesson(1, identifiers=["configure_bedrock"])])
    assert scored(index, signals(identifiers={"configure_bedrock_v2", "Configure_Bedrock"})) == []


def test_keyword_groups_need_every_term() -> None:
    index = RecallIndex([lesson(1, keyword_groups=[["bedrock", "region", "fallback"]])])
    assert scored(index, signals(words={"bedrock", "region"})) == []
    assert len(scored(index, signals(words={"bedrock", "region", "fallback", "other"}))) == 1


def test_any_one_of_several_groups_is_enough() -> None:
    card = lesson(1, keyword_groups=[["bedrock", "region"], ["vertex", "project"]])
    assert scored(RecallIndex([card]), signals(words={"vertex", "project"})) == [
        (lesson_id(1), 500, "keywords project+vertex")
    ]


def test_broad_words_never_retrieve() -> None:
    # Card rules already refuse broad keyword terms; an identifier spelled like one is ignored.
    index = RecallIndex([lesson(1, identifiers=["file", "the_file"])])
    assert scored(index, signals(identifiers={"file"}, words={"file"})) == []
    assert len(scored(index, signals(identifiers={"the_file"}))) == 1


def test_foreign_repository_cards_are_not_indexed() -> None:
    mine = lesson(1, folders=["src"])
    theirs = lesson(2, folders=["src"], repository="forge:github.com/other/repo")
    index = RecallIndex([mine, theirs], repository=mine.scope.repository)  # type: ignore[union-attr]
    assert [m for m, _, _ in scored(index, signals(("src/x.py",)))] == [lesson_id(1)]
    assert len(index) == 1


def test_graph_lessons_are_kept_apart_by_node_and_qualifier() -> None:
    repo = "forge:github.com/acme/widgets"
    index = RecallIndex(
        [
            graph_lesson(2, "build"),
            graph_lesson(1, "build", repository=repo),
            graph_lesson(3, "build", repository="forge:github.com/other/repo"),
            graph_lesson(4, "review"),
            graph_lesson(5, "build", graph_hash="b" * 64),
        ],
        repository=repo,
    )
    assert [card.id for card in index.graph_lessons(GRAPH, "build", repo)] == [
        lesson_id(1),
        lesson_id(2),
    ]
    assert index.graph_lessons(GRAPH, "deploy", repo) == ()
    assert len(index) == 0
    assert index.graph_lesson_count == 5


def test_reasons_are_deterministic_when_several_associations_tie() -> None:
    card = lesson(1, identifiers=["zeta_one", "alpha_one"])
    found = signals(identifiers={"zeta_one", "alpha_one"})
    assert scored(RecallIndex([card]), found)[0][2] == "identifier alpha_one"


def test_a_group_whose_rarest_terms_are_present_still_needs_the_rest() -> None:
    index = RecallIndex(
        [
            lesson(1, keyword_groups=[["alpha", "beta", "gamma"]]),
            lesson(2, keyword_groups=[["gamma", "delta"]]),
            lesson(3, keyword_groups=[["gamma", "epsilon"]]),
        ]
    )
    assert scored(index, signals(words={"alpha", "beta", "delta"})) == []
    assert [m for m, _, _ in scored(index, signals(words={"alpha", "beta", "gamma"}))] == [
        lesson_id(1)
    ]


def test_a_pair_waits_on_its_rarer_term_whichever_sorts_first() -> None:
    # "alpha" is in every group, "zeta" in one: the pair waits under zeta, then alpha.
    common = [lesson(n, keyword_groups=[["alpha", f"term{n}"]]) for n in range(2, 6)]
    index = RecallIndex([lesson(1, keyword_groups=[["zeta", "alpha"]]), *common])
    assert list(index._groups["zeta"]) == ["alpha"]
    assert [m for m, _, _ in scored(index, signals(words={"alpha", "zeta"}))] == [lesson_id(1)]
    assert scored(index, signals(words={"alpha"})) == []


def test_equally_frequent_terms_place_a_group_by_its_terms_order() -> None:
    index = RecallIndex([lesson(1, keyword_groups=[["mu", "kappa", "lambda"]])])
    assert list(index._groups) == ["kappa"]
    assert list(index._groups["kappa"]) == ["lambda"]
    found = signals(words={"kappa", "lambda", "mu"})
    assert scored(index, found) == [(lesson_id(1), SCORE_KEYWORDS, "keywords kappa+lambda+mu")]


def test_a_pair_waits_as_its_position_and_a_longer_group_with_its_terms() -> None:
    index = RecallIndex(
        [
            lesson(1, keyword_groups=[["beta", "alpha"]]),
            lesson(2, keyword_groups=[["alpha", "beta"], ["mu", "kappa", "lambda"]]),
            lesson(3, keyword_groups=[["alpha", "beta"]]),
        ]
    )
    # A pair's terms are the two keys it waits under: its position is all it keeps.
    assert index._groups == {
        "alpha": {"beta": [0, 1, 2]},
        "kappa": {"lambda": (1, ("kappa", "lambda", "mu"))},
    }
    found = signals(words={"alpha", "beta", "kappa", "lambda", "mu"})
    assert scored(index, found) == [
        (lesson_id(1), SCORE_KEYWORDS, "keywords alpha+beta"),
        (lesson_id(2), SCORE_KEYWORDS, "keywords alpha+beta"),
        (lesson_id(3), SCORE_KEYWORDS, "keywords alpha+beta"),
    ]
    assert scored(RecallIndex.from_state(index.state()), found) == scored(index, found)


def test_cards_rank_by_id_whatever_order_the_index_holds_them_in() -> None:
    cards = [lesson(number, identifiers=["shared_name"]) for number in (3, 1, 2)]
    found = signals(identifiers={"shared_name"})
    expected = [(lesson_id(n), SCORE_IDENTIFIER, "identifier shared_name") for n in (1, 2, 3)]
    shuffled, ordered = RecallIndex(cards), RecallIndex(sorted(cards, key=lambda c: c.id))
    assert scored(shuffled, found) == scored(ordered, found) == expected
    assert scored(RecallIndex.from_state(shuffled.state()), found) == expected
    # Held in id order (as a store's snapshot gives them), positions alone rank them.
    assert shuffled._ids is not None
    assert ordered._ids is None


class _CountedColumn:
    """A text column read through Python, as the hook cache's is, counting the ids it yields."""

    def __init__(self, strings: tuple[str, ...]) -> None:
        self.strings, self.reads = strings, 0

    def __len__(self) -> int:
        return len(self.strings)

    def __getitem__(self, position: int) -> str:
        self.reads += 1
        return self.strings[position]


def test_a_column_read_through_python_is_not_walked_to_check_the_id_order() -> None:
    # A hook call loads a cached index with such a column and matches a few of its cards:
    # checking the order of every id would cost it more than ranking those few by id.
    cards = [lesson(number, identifiers=["shared_name"] if number in (7, 3) else ["own"])
             for number in range(1, 11)]  # fmt: skip
    state = RecallIndex(cards).state()
    ids = _CountedColumn(tuple(state[1][0]))
    restored = RecallIndex.from_state((state[0], (ids, *state[1][1:]), *state[2:]))
    assert ids.reads == 0
    found = signals(identifiers={"shared_name"})
    expected = [(lesson_id(n), SCORE_IDENTIFIER, "identifier shared_name") for n in (3, 7)]
    assert scored(restored, found) == expected
    assert ids.reads <= 4  # the two matches' ids, to rank them and to build their cards


def test_a_key_of_one_card_or_of_several_matches_each_card_once() -> None:
    # Entries as a store decodes them; the first names its file and identifier twice.
    def entry(
        number: int, files: list[str], folders: list[str], identifiers: list[str]
    ) -> tuple[object, ...]:
        return (lesson_id(number), 1, f"Card {number}", "Do it.", "repo", files, folders,
                identifiers, [])  # fmt: skip

    index = RecallIndex.from_entries(
        [
            entry(1, ["src/a.py", "src/a.py"], ["src"], ["load_config", "load_config"]),
            entry(2, ["src/a.py"], [], ["only_here"]),
            entry(3, ["src/b.py"], ["src", "src"], []),
        ],
        repository="repo",
    )
    # One card: its position alone; more cards: their positions in order, each once.
    assert index._files == {"src/a.py": [0, 1], "src/b.py": 2}
    assert index._folders == {"src": [0, 2]}
    assert index._identifiers == {"load_config": 0, "only_here": 1}
    found = signals(paths=("src/a.py",), identifiers={"only_here", "load_config"})
    assert scored(index, found) == [
        (lesson_id(1), SCORE_FILE, "file src/a.py"),
        (lesson_id(2), SCORE_FILE, "file src/a.py"),
        (lesson_id(3), SCORE_FOLDER, "folder src"),
    ]
    assert scored(index, signals(paths=("src/b.py",))) == [
        (lesson_id(3), SCORE_FILE, "file src/b.py"),
        (lesson_id(1), SCORE_FOLDER, "folder src"),
    ]
    assert scored(index, signals(identifiers={"load_config"})) == [
        (lesson_id(1), SCORE_IDENTIFIER, "identifier load_config")
    ]
    restored = RecallIndex.from_state(index.state())
    assert scored(restored, found) == scored(index, found)
