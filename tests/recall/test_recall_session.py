from __future__ import annotations

from active_memory.models.config import ActiveMemoryConfig
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import Caller, RecallSession
from active_memory.recall.render import FRAME_CLOSE, FRAME_NOTE, FRAME_OPEN, card_block
from active_memory.recall.signals import ToolCall
from recall.kit import GRAPH, REPOSITORY, ROOT, WORKSPACE, graph_lesson, lesson, lesson_id

CALLER = Caller("build", "conv-1", "exec-1")


def read(path: str) -> ToolCall:
    return ToolCall("Read", {"file_path": f"{WORKSPACE}/{path}"}, WORKSPACE)


def session(*cards: object, **config: object) -> RecallSession:
    index = RecallIndex(cards, repository=REPOSITORY)  # type: ignore[arg-type]
    return RecallSession(index, ROOT, ActiveMemoryConfig(**config))  # type: ignore[arg-type]


def test_report_lists_matches_with_score_reason_and_outcome() -> None:
    served = session(lesson(1, files=["src/a.py"]), lesson(2, folders=["src"]))
    recall = served.recall(read("src/a.py"), CALLER)
    report = recall.report
    assert [(c.id, c.score, c.reason, c.outcome) for c in report.cards] == [
        (lesson_id(1), 1000, "file src/a.py", "delivered"),
        (lesson_id(2), 800, "folder src", "delivered"),
    ]
    assert report.paths == ("src/a.py",)
    assert report.used_bytes == len(recall.text.encode())
    assert report.to_dict()["cards"][0]["outcome"] == "delivered"


def test_dedup_across_calls_after_commit_only() -> None:
    served = session(lesson(1, files=["src/a.py"]))
    first = served.recall(read("src/a.py"), CALLER)
    first.release()
    second = served.recall(read("src/a.py"), CALLER)
    assert second.report.delivered == (f"{lesson_id(1)}@1",)
    second.commit()
    third = served.recall(read("src/a.py"), CALLER)
    assert third.text == ""
    assert third.report.already_delivered == (f"{lesson_id(1)}@1",)
    other = served.recall(read("src/a.py"), Caller("build", "conv-2"))
    assert other.report.delivered == (f"{lesson_id(1)}@1",)


def test_a_new_revision_is_delivered_after_the_index_is_replaced() -> None:
    served = session(lesson(1, files=["src/a.py"]))
    served.recall(read("src/a.py"), CALLER).commit()
    served.replace_index(RecallIndex([lesson(1, files=["src/a.py"], revision=2)]))
    again = served.recall(read("src/a.py"), CALLER)
    assert again.report.delivered == (f"{lesson_id(1)}@2",)


def test_left_out_cards_stay_eligible_for_a_later_call() -> None:
    big = lesson(1, files=["src/a.py"], recommendation="y" * 600)
    small = lesson(2, files=["src/a.py"], recommendation="tiny")
    frame = len(f"{FRAME_OPEN}\n{FRAME_NOTE}\n{FRAME_CLOSE}".encode())
    tokens = (frame + len(card_block(small).encode()) + 3) // 4 + 1
    served = session(big, small, hook_injection_tokens=tokens)
    first = served.recall(read("src/a.py"), CALLER)
    assert first.report.delivered == (f"{lesson_id(2)}@1",)
    assert first.report.left_out == (f"{lesson_id(1)}@1",)
    first.commit()
    wide = session(big, small)
    wide.ledger = served.ledger
    later = wide.recall(read("src/a.py"), CALLER)
    assert later.report.delivered == (f"{lesson_id(1)}@1",)
    assert later.report.already_delivered == (f"{lesson_id(2)}@1",)


def test_a_receipt_is_recorded_even_when_nothing_matches() -> None:
    served = session(lesson(1, files=["src/a.py"]))
    recall = served.recall(read("docs/b.md"), CALLER)
    assert recall.text == ""
    assert [(r.tool, r.paths, r.execution) for r in served.receipts.snapshot()] == [
        ("Read", ("docs/b.md",), "exec-1")
    ]


def test_repository_opt_out_matches_nothing_but_keeps_receipts() -> None:
    served = session(lesson(1, files=["src/a.py"]), repository=False)
    assert served.recall(read("src/a.py"), CALLER).report.cards == ()
    assert len(served.receipts.snapshot()) == 1


def test_guidance_renders_node_lessons_under_the_node_budget_once_per_conversation() -> None:
    served = session(graph_lesson(1, "build"), graph_lesson(2, "review"))
    first = served.guidance(GRAPH, "build", CALLER)
    assert first.report.delivered == (f"{lesson_id(1)}@1",)
    assert first.report.budget_bytes == 16_000 * 4
    first.commit()
    assert served.ledger.deliveries[0].channel == "prompt"
    assert served.guidance(GRAPH, "build", CALLER).text == ""
    assert served.guidance(GRAPH, "build", Caller("build", "conv-2")).text != ""


def test_graph_opt_out_gives_no_guidance() -> None:
    served = session(graph_lesson(1, "build"), graph=False)
    assert served.guidance(GRAPH, "build", CALLER).text == ""


def test_rerender_shrinks_without_a_second_receipt() -> None:
    served = session(lesson(1, files=["src/a.py"]), lesson(2, files=["src/a.py"]))
    recall = served.recall(read("src/a.py"), CALLER)
    smaller = served.rerender(recall, budget_bytes=recall.report.used_bytes - 1, max_chars=None)
    assert len(smaller.report.delivered) == 1
    assert len(served.receipts.snapshot()) == 1


def test_a_delivery_names_the_receipt_of_the_call_it_rode_on() -> None:
    served = session(lesson(1, files=["src/a.py"]), lesson(2, files=["src/b.py"]))
    served.recall(read("src/x.py"), CALLER).commit()  # receipt 1: nothing matched
    first = served.recall(read("src/a.py"), CALLER)
    second = served.recall(read("src/b.py"), CALLER)
    assert first.receipt is not None
    assert second.receipt is not None
    (delivered_a,) = first.commit()
    (delivered_b,) = second.commit()
    assert (delivered_a.receipt_seq, delivered_b.receipt_seq) == (2, 3)
    assert (first.receipt.seq, second.receipt.seq) == (2, 3)
    guidance = served.guidance(GRAPH, "build", CALLER)
    assert all(delivery.receipt_seq is None for delivery in guidance.commit())


def test_a_call_named_twice_keeps_one_receipt() -> None:
    served = session(lesson(1, files=["src/a.py"]))
    first = served.recall(read("src/a.py"), CALLER, call_id="nonce-1")
    first.release()  # the helper gave up on this answer
    again = served.recall(read("src/a.py"), CALLER, call_id="nonce-1")
    assert again.receipt is first.receipt
    assert len(served.receipts.snapshot()) == 1
    (delivery,) = again.commit()
    assert delivery.receipt_seq == 1


def test_a_lesson_rewritten_by_a_new_store_generation_is_framed_from_its_new_text() -> None:
    served = session(lesson(5, files=["src/a.py"], title="First words"))
    assert "First words" in served.recall(read("src/a.py"), CALLER).text
    rewritten = lesson(5, files=["src/a.py"], title="Second words", revision=2)
    served.replace_index(RecallIndex([rewritten], repository=REPOSITORY))
    again = served.recall(read("src/a.py"), Caller("build", "conv-9"))
    assert "Second words" in again.text
    assert "First words" not in again.text
    assert again.report.delivered == (f"{lesson_id(5)}@2",)


def test_one_report_holds_delivered_left_out_and_already_delivered_cards() -> None:
    first = lesson(6, files=["src/a.py"], recommendation="first")
    big = lesson(7, files=["src/a.py"], recommendation="b" * 600)
    small = lesson(8, files=["src/a.py"], recommendation="small")
    served = session(first, big, small)
    frame = len(f"{FRAME_OPEN}\n{FRAME_NOTE}\n{FRAME_CLOSE}".encode())
    only = {card.id: frame + len(card_block(card).encode()) for card in (first, small)}
    served.recall(read("src/a.py"), CALLER, budget_bytes=only[first.id]).commit()
    mixed = served.recall(read("src/a.py"), CALLER, budget_bytes=only[small.id])
    outcomes = {card.id: card.outcome for card in mixed.report.cards}
    assert outcomes == {first.id: "already_delivered", big.id: "left_out", small.id: "delivered"}
    mixed.commit()
    rest = served.recall(read("src/a.py"), CALLER)
    assert [card.outcome for card in rest.report.cards] == [
        "already_delivered", "delivered", "already_delivered"]  # fmt: skip
    rest.commit()
    assert {card.outcome for card in served.recall(read("src/a.py"), CALLER).report.cards} == {
        "already_delivered"
    }
    fresh = served.recall(read("src/a.py"), Caller("build", "conv-4"))
    assert {card.outcome for card in fresh.report.cards} == {"delivered"}


def test_the_cards_a_recall_holds_are_the_ones_its_report_says_it_delivered() -> None:
    first = lesson(9, files=["src/a.py"], recommendation="first")
    big = lesson(10, files=["src/a.py"], recommendation="b" * 600)
    small = lesson(11, files=["src/a.py"], recommendation="small")
    served = session(first, big, small)
    frame = len(f"{FRAME_OPEN}\n{FRAME_NOTE}\n{FRAME_CLOSE}".encode())
    budget = frame + len(card_block(first).encode()) + len(card_block(small).encode())
    for caller in (CALLER, Caller("build", "unknown", tracked=False)):
        recall = served.recall(read("src/a.py"), caller, budget_bytes=budget)
        assert recall.delivered == recall.report.delivered == (first.key, small.key)
        recall.commit()
    assert served.recall(read("src/a.py"), CALLER).delivered == (big.key,)
    assert served.recall(read("src/b.py"), CALLER).delivered == ()
