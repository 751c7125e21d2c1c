from __future__ import annotations

import threading

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
