from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from active_memory.errors import RecallError
from active_memory.recall.exposure import RECEIPT_PATHS, ExposureLedger, ReceiptRing
from recall.kit import lesson


def take_all(eligible: tuple[object, ...]) -> tuple[object, ...]:
    return eligible


def test_nothing_is_recorded_until_the_claim_is_committed() -> None:
    ledger = ExposureLedger(clock=lambda: 42)
    card = lesson(1, files=["a.py"])
    claim = ledger.claim("conv", [card], take_all, node_id="build")  # type: ignore[arg-type]
    assert ledger.deliveries == ()
    assert not ledger.was_delivered("conv", card.key)
    records = claim.commit()
    assert [(d.key, d.node_id, d.conversation_id, d.channel, d.time_ms) for d in records] == [
        (card.key, "build", "conv", "hook", 42)
    ]
    assert ledger.deliveries == records


def test_a_claimed_card_is_not_offered_to_a_parallel_call_of_the_same_conversation() -> None:
    ledger = ExposureLedger()
    card = lesson(1, files=["a.py"])
    first = ledger.claim("conv", [card], take_all, node_id="n")  # type: ignore[arg-type]
    second = ledger.claim("conv", [card], take_all, node_id="n")  # type: ignore[arg-type]
    assert first.lessons == (card,)
    assert second.lessons == ()
    other = ledger.claim("other", [card], take_all, node_id="n")  # type: ignore[arg-type]
    assert other.lessons == (card,)


def test_a_released_claim_makes_cards_eligible_again() -> None:
    ledger = ExposureLedger()
    card = lesson(1, files=["a.py"])
    ledger.claim("conv", [card], take_all, node_id="n").release()  # type: ignore[arg-type]
    again = ledger.claim("conv", [card], take_all, node_id="n")  # type: ignore[arg-type]
    assert again.lessons == (card,)
    assert ledger.deliveries == ()


def test_settling_twice_records_once() -> None:
    ledger = ExposureLedger()
    claim = ledger.claim("c", [lesson(1, files=["a.py"])], take_all, node_id="n")  # type: ignore[arg-type]
    assert len(claim.commit()) == 1
    assert claim.commit() == ()
    claim.release()
    assert len(ledger.deliveries) == 1


def test_a_new_revision_is_delivered_again() -> None:
    ledger = ExposureLedger()
    ledger.claim("c", [lesson(1, files=["a.py"])], take_all, node_id="n").commit()  # type: ignore[arg-type]
    newer = lesson(1, files=["a.py"], revision=2)
    claim = ledger.claim("c", [newer], take_all, node_id="n")  # type: ignore[arg-type]
    assert claim.lessons == (newer,)


def test_parallel_claims_never_deliver_a_card_twice() -> None:
    ledger = ExposureLedger()
    cards = [lesson(n, files=["a.py"]) for n in range(1, 30)]
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(20):
            ledger.claim("conv", cards, take_all, node_id="n").commit()  # type: ignore[arg-type]

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = [delivery.key for delivery in ledger.deliveries]
    assert sorted(keys) == sorted(card.key for card in cards)


def test_receipts_keep_the_first_and_the_latest() -> None:
    ring = ReceiptRing(capacity=8, clock=lambda: 7)
    for number in range(1, 21):
        ring.add("Read", [f"f{number}.py"], execution="e1")
    seqs = [receipt.seq for receipt in ring.snapshot()]
    assert seqs == [1, 2, 3, 4, 17, 18, 19, 20]
    assert ring.dropped == 12


def test_receipts_hold_a_few_paths_never_arguments() -> None:
    ring = ReceiptRing()
    receipt = ring.add("Bash", [f"p{n}" for n in range(50)], execution=None)
    assert len(receipt.paths) == RECEIPT_PATHS
    assert set(receipt.model_dump()) == {"seq", "execution", "time_ms", "tool", "paths"}


def test_default_ring_holds_512() -> None:
    ring = ReceiptRing()
    for _ in range(600):
        ring.add("Read", [])
    receipts = ring.snapshot()
    assert len(receipts) == 512
    assert receipts[0].seq == 1
    assert receipts[-1].seq == 600


def test_a_ring_needs_room() -> None:
    with pytest.raises(RecallError, match="capacity"):
        ReceiptRing(capacity=1)


def test_an_untracked_claim_is_offered_everything_and_remembers_nothing() -> None:
    ledger = ExposureLedger(clock=lambda: 5)
    card = lesson(1, files=["a.py"])
    ledger.claim("unknown", [card], take_all, node_id="n").commit()  # type: ignore[arg-type]
    held = ledger.claim("unknown", [card], take_all, node_id="n")  # type: ignore[arg-type]
    assert held.lessons == ()  # a tracked conversation named "unknown" is deduplicated
    first = ledger.claim("x", [card], take_all, node_id="n", tracked=False)  # type: ignore[arg-type]
    second = ledger.claim("x", [card], take_all, node_id="n", tracked=False)  # type: ignore[arg-type]
    assert first.lessons == second.lessons == (card,)
    assert [d.conversation_id for d in (*first.commit(), *second.commit())] == ["x", "x"]
    assert not ledger.was_delivered("x", card.key)


class MemoryStore:
    """An ExposureStore over a dict, as another process's file would look."""

    def __init__(self) -> None:
        self.keys: dict[str, list[str]] = {}
        self.loads: list[str] = []

    def load(self, conversation: str) -> list[str]:
        self.loads.append(conversation)
        return list(self.keys.get(conversation, ()))

    def record(self, conversation: str, keys: Sequence[str]) -> None:
        self.keys.setdefault(conversation, []).extend(keys)


def test_a_store_is_read_on_every_tracked_claim_and_written_on_commit_only() -> None:
    store = MemoryStore()
    ledger = ExposureLedger(store=store)
    one, two = lesson(1, files=["a.py"]), lesson(2, files=["a.py"])
    store.keys["conv"] = [one.key]  # handed over by another process
    claim = ledger.claim("conv", [one, two], take_all, node_id="n")  # type: ignore[arg-type]
    assert claim.lessons == (two,)
    assert store.keys["conv"] == [one.key]  # claimed is not recorded
    claim.release()
    assert store.keys["conv"] == [one.key]
    claim = ledger.claim("conv", [one, two], take_all, node_id="n")  # type: ignore[arg-type]
    assert [record.key for record in claim.commit()] == [two.key]
    assert store.keys["conv"] == [one.key, two.key]
    assert claim.commit() == ()
    assert store.keys["conv"] == [one.key, two.key]  # settled once, recorded once
    assert store.loads == ["conv", "conv"]
    assert ledger.was_delivered("conv", one.key)


def test_a_key_another_process_recorded_later_is_not_offered() -> None:
    store = MemoryStore()
    ledger = ExposureLedger(store=store)
    card = lesson(1, files=["a.py"])
    assert ledger.claim("conv", [], take_all, node_id="n").lessons == ()  # type: ignore[arg-type]
    store.keys["conv"] = [card.key]
    assert ledger.claim("conv", [card], take_all, node_id="n").lessons == ()  # type: ignore[arg-type]


def test_an_untracked_claim_neither_reads_nor_writes_the_store() -> None:
    store = MemoryStore()
    ledger = ExposureLedger(store=store, records=False)
    card = lesson(1, files=["a.py"])
    claim = ledger.claim("x", [card], take_all, node_id="n", tracked=False)  # type: ignore[arg-type]
    assert claim.lessons == (card,)
    assert claim.commit() == ()
    assert (store.loads, store.keys) == ([], {})


def test_without_records_the_store_still_gets_the_keys() -> None:
    store = MemoryStore()
    ledger = ExposureLedger(store=store, records=False)
    card = lesson(1, files=["a.py"])
    assert ledger.claim("c", [card], take_all, node_id="n").commit() == ()  # type: ignore[arg-type]
    assert store.keys == {"c": [card.key]}


class _CountingStore:
    """An exposure store that counts what it is asked (the run's ledger files stand in)."""

    def __init__(self) -> None:
        self.loads: list[str] = []
        self.records: list[str] = []

    def load(self, conversation: str) -> tuple[str, ...]:
        self.loads.append(conversation)
        return ()

    def record(self, conversation: str, keys: tuple[str, ...]) -> None:
        self.records.append(conversation)


def test_an_unshared_claim_never_touches_the_store_and_a_shared_one_does() -> None:
    store = _CountingStore()
    ledger = ExposureLedger(store=store)
    card = lesson(1, files=["a.py"])
    ledger.claim("in-process", [card], lambda cards: cards, node_id="n", shared=False).commit()  # type: ignore[arg-type]
    assert (store.loads, store.records) == ([], [])
    ledger.claim("hook", [card], lambda cards: cards, node_id="n").commit()  # type: ignore[arg-type]
    assert (store.loads, store.records) == (["hook"], ["hook"])


def test_records_built_without_validation_equal_validated_ones() -> None:
    """The ledger builds its own receipts and deliveries without running the validators; they
    must be the very models validation builds (fields, equality, hash, dump, JSON, repr)."""
    from active_memory.models.runs import Delivery, ToolReceipt

    ring = ReceiptRing(clock=lambda: 7)
    receipt = ring.add("Read", ["src/a.py", "src/b.py"], "exec-1")
    validated_receipt = ToolReceipt(seq=1, execution="exec-1", time_ms=7, tool="Read",
                                    paths=("src/a.py", "src/b.py"))  # fmt: skip
    ledger = ExposureLedger(clock=lambda: 42)
    card = lesson(1, files=["a.py"])
    claim = ledger.claim("conv", [card], take_all, node_id="build", execution="exec-1",
                         receipt_seq=1)  # type: ignore[arg-type]  # fmt: skip
    (delivery,) = claim.commit()
    validated_delivery = Delivery(lesson_id=card.id, revision=card.revision, node_id="build",
                                  conversation_id="conv", channel="hook", execution="exec-1",
                                  time_ms=42, receipt_seq=1)  # fmt: skip
    for built, validated in ((receipt, validated_receipt), (delivery, validated_delivery)):
        assert type(built) is type(validated)
        assert built == validated
        assert hash(built) == hash(validated)
        assert built.model_dump() == validated.model_dump()
        assert built.model_dump_json() == validated.model_dump_json()
        assert repr(built) == repr(validated)
        assert built.model_fields_set == validated.model_fields_set
        assert type(built).model_validate(built.model_dump()) == built


@pytest.mark.parametrize(
    ("node_id", "conversation_id"), [("", "conv"), ("build", "")], ids=["node", "conversation"]
)
def test_a_delivery_the_model_refuses_is_refused_as_before(
    node_id: str, conversation_id: str
) -> None:
    """Values the ledger cannot vouch for go through the model, which refuses them."""
    from active_memory.errors import RunRecordError

    ledger = ExposureLedger()
    card = lesson(1, files=["a.py"])
    claim = ledger.claim(conversation_id, [card], take_all, node_id=node_id)  # type: ignore[arg-type]
    with pytest.raises(RunRecordError):
        claim.commit()


def test_a_receipt_with_an_empty_tool_name_is_refused_as_before() -> None:
    from active_memory.errors import RunRecordError

    with pytest.raises(RunRecordError):
        ReceiptRing().add("", ["a.py"])


def test_a_call_that_matched_nothing_claims_nothing_and_never_asks_the_store() -> None:
    class Store:
        loads = 0

        def load(self, conversation: str) -> tuple[str, ...]:
            Store.loads += 1
            return ()

        def record(self, conversation: str, keys: Sequence[str]) -> None:
            raise AssertionError("nothing to record")

    def refuse(eligible: tuple[object, ...]) -> tuple[object, ...]:
        raise AssertionError("nothing to choose from")

    ledger = ExposureLedger(store=Store())
    claim = ledger.claim("conv", [], refuse, node_id="n")  # type: ignore[arg-type]
    assert claim.lessons == ()
    assert claim.commit() == ()
    claim.release()
    assert Store.loads == 0
    assert ledger.deliveries == ()
    card = lesson(1, files=["a.py"])
    later = ledger.claim("conv", [card], take_all, node_id="n")  # type: ignore[arg-type]
    assert later.lessons == (card,)


def test_a_card_the_conversation_received_meanwhile_is_not_recorded_again() -> None:
    ledger = ExposureLedger(clock=lambda: 42)
    one, two = lesson(1, files=["a.py"]), lesson(2, files=["a.py"])
    single = ledger.claim("conv", [one], take_all, node_id="build")  # type: ignore[arg-type]
    pair = ledger.claim("other", [one, two], take_all, node_id="build")  # type: ignore[arg-type]
    # Another answerer handed the cards over while these claims were in flight.
    ledger.mark_delivered("conv", [one.key])
    ledger.mark_delivered("other", [two.key])
    assert single.commit() == ()
    assert [record.key for record in pair.commit()] == [one.key]
    assert [(d.key, d.conversation_id) for d in ledger.deliveries] == [(one.key, "other")]
    assert ledger.was_delivered("other", two.key)
    assert ledger.was_delivered("other", one.key)


def test_each_card_of_an_answer_gets_one_record_however_often_it_was_claimed() -> None:
    ledger = ExposureLedger(clock=lambda: 42)
    card = lesson(1, files=["a.py"])
    claim = ledger.claim("conv", [card, card], take_all, node_id="build")  # type: ignore[arg-type]
    assert [record.key for record in claim.commit()] == [card.key]
    untracked = ledger.claim("unknown", [card, card], take_all, node_id="build", tracked=False)  # type: ignore[arg-type]
    assert [record.key for record in untracked.commit()] == [card.key]


def test_a_receipt_path_that_is_not_text_goes_through_the_model_and_is_refused() -> None:
    from active_memory.errors import RunRecordError

    ring = ReceiptRing()
    assert ring.add("Read", ("a.py", "b.py")).paths == ("a.py", "b.py")
    assert ring.add("Read", ()).paths == ()
    with pytest.raises(RunRecordError):
        ring.add("Read", ("a.py", 5))  # type: ignore[arg-type]
