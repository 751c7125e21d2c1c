"""Exposure ledger and tool receipts: the delivery manifest a postmortem reads.

An ``id@revision`` reaches a conversation once: compaction does not reset it, a new revision is
delivered again, another conversation can receive it. Exposure is recorded only when the answer
was handed over (the helper acknowledged, the HTTP response was written, the prompt text was
returned); until then the cards are *claimed* so a parallel tool call of the same conversation
does not deliver them twice, and a claim that is released makes them eligible again.

A call whose conversation is unknown (no run id, no session id, no transcript) is claimed
*untracked*: it is offered every matching card and its deliveries are recorded, but nothing is
remembered for it, because one shared "unknown" conversation would hide a card from every other
agent that could not name its conversation either.

Receipts record every tool call (even one that matched nothing): node execution, tool name, time
and a few root-relative paths, never arguments or results. At most 512 are kept: the first half
and the most recent half, with a count of those dropped in between.

A ledger may be given a *store* (:class:`ExposureStore`: ``load(conversation)`` and
``record(conversation, keys)``) that keeps exposures beyond the process: the ``serve`` broker
and the hook fallback share one private file per conversation (the hook package's
``exposure_files``), so a restarted broker, or the other answerer, does
not deliver a card again. A tracked claim first loads what the store holds for its conversation
(so a card another process handed over meanwhile is not offered), and a commit records the new
keys there, after the in-memory ledger, outside its lock. The in-process run of ``host`` keeps
no store: a run is one process.

Deliveries and receipts are run-record models, imported when the first one is made rather than
with this module: the hook fallback (one call per process, its exposures kept in a file) keeps
neither (``ExposureLedger(records=False)``) and so never loads the models or pydantic. Locks
come from ``_thread``, the built-in module behind ``threading.Lock``, for the same reason.
"""

from __future__ import annotations

import itertools
import time
from _thread import allocate_lock
from collections import deque

from active_memory.errors import RecallError
from active_memory.recall.card import card_key
from active_memory.recall.record import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Literal, Protocol, TypeAlias

    from active_memory.models.runs import Delivery, ToolReceipt
    from active_memory.recall.card import RecallCard

    Channel: TypeAlias = Literal["hook", "prompt"]

    class ExposureStore(Protocol):
        """Exposures kept outside the ledger (a file per conversation); neither call raises."""

        def load(self, conversation: str) -> Iterable[str]:
            """The ``id@revision`` keys recorded for ``conversation``."""

        def record(self, conversation: str, keys: Sequence[str]) -> None:
            """Add ``keys``, handed over to ``conversation``."""


__all__ = ["RECEIPT_CAPACITY", "RECEIPT_PATHS", "Claim", "ExposureLedger", "ReceiptRing"]

RECEIPT_CAPACITY = 512
RECEIPT_PATHS = 8


def _now_ms() -> int:
    return int(time.time() * 1000)


@record
class Claim:
    """Cards reserved for one answer in flight; ``commit`` once handed over, else ``release``.

    ``settled`` turns True, under the ledger's lock, at the first of the two.
    """

    ledger: ExposureLedger
    number: int
    conversation_id: str
    node_id: str
    execution: str | None
    channel: Channel
    lessons: tuple[RecallCard, ...]
    tracked: bool = True
    settled: bool = False

    def __repr__(self) -> str:
        keys = [card_key(lesson) for lesson in self.lessons]
        return f"Claim({self.number}, {self.conversation_id!r}, {keys!r})"

    def commit(self) -> tuple[Delivery, ...]:
        """Record the deliveries; a second call (or one after ``release``) records nothing."""
        return self.ledger._settle(self, delivered=True)

    def release(self) -> None:
        self.ledger._settle(self, delivered=False)


class ExposureLedger:
    """Which ``id@revision`` each conversation has received, and the deliveries as records.

    ``records=False`` keeps only the keys: ``commit`` then returns no delivery records.
    ``store`` shares the keys of tracked conversations with other processes (see the module).
    """

    def __init__(
        self,
        clock: Callable[[], int] = _now_ms,
        *,
        records: bool = True,
        store: ExposureStore | None = None,
    ) -> None:
        self._clock = clock
        self._records = records
        self.store = store
        self._lock = allocate_lock()
        self._delivered: dict[str, set[str]] = {}
        self._claimed: dict[str, dict[str, int]] = {}
        self._deliveries: list[Delivery] = []
        self._numbers = itertools.count(1)

    def claim(
        self,
        conversation_id: str,
        lessons: Sequence[RecallCard],
        choose: Callable[[tuple[RecallCard, ...]], Sequence[RecallCard]],
        *,
        node_id: str,
        execution: str | None = None,
        channel: Channel = "hook",
        tracked: bool = True,
    ) -> Claim:
        """Offer ``choose`` the lessons this conversation has neither received nor claimed.

        ``choose`` runs under the ledger lock (it renders; it must be quick) and returns the
        lessons it will hand over; those are claimed until the returned claim is settled. An
        untracked claim (``tracked=False``) is offered every lesson and remembers nothing.
        """
        stored = () if self.store is None or not tracked else self.store.load(conversation_id)
        with self._lock:
            if not tracked:
                chosen = tuple(choose(tuple(lessons)))
                number = next(self._numbers)
                return Claim(self, number, conversation_id, node_id, execution, channel, chosen,
                             tracked=False)  # fmt: skip
            delivered = self._delivered.get(conversation_id, set())
            if stored:
                delivered = self._delivered.setdefault(conversation_id, delivered)
                delivered.update(stored)
            claimed = self._claimed.setdefault(conversation_id, {})
            eligible = tuple(
                lesson
                for lesson in lessons
                if card_key(lesson) not in delivered and card_key(lesson) not in claimed
            )
            chosen = tuple(choose(eligible))
            number = next(self._numbers)
            for lesson in chosen:
                claimed[card_key(lesson)] = number
        return Claim(self, number, conversation_id, node_id, execution, channel, chosen)

    def _settle(self, claim: Claim, *, delivered: bool) -> tuple[Delivery, ...]:
        records, fresh = self._settle_locked(claim, delivered=delivered)
        if fresh and claim.tracked and self.store is not None:
            self.store.record(claim.conversation_id, fresh)
        return records

    def _settle_locked(
        self, claim: Claim, *, delivered: bool
    ) -> tuple[tuple[Delivery, ...], tuple[str, ...]]:
        """The delivery records and the keys newly delivered."""
        with self._lock:
            if claim.settled:
                return (), ()
            claim.settled = True
            if claim.tracked:
                claimed = self._claimed.get(claim.conversation_id, {})
                for lesson in claim.lessons:
                    if claimed.get(card_key(lesson)) == claim.number:
                        del claimed[card_key(lesson)]
            if not delivered or not claim.lessons:
                return (), ()
            keys = (
                self._delivered.setdefault(claim.conversation_id, set()) if claim.tracked else set()
            )
            fresh = {card_key(lesson): lesson for lesson in claim.lessons}
            for key in keys.intersection(fresh):
                del fresh[key]
            keys.update(fresh)
            if not self._records or not fresh:
                return (), tuple(fresh)
            from active_memory.models.runs import Delivery  # see the module note

            now = self._clock()
            records = tuple(
                Delivery(
                    lesson_id=lesson.id,
                    revision=lesson.revision,
                    node_id=claim.node_id,
                    conversation_id=claim.conversation_id,
                    channel=claim.channel,
                    execution=claim.execution,
                    time_ms=now,
                )
                for lesson in fresh.values()
            )
            self._deliveries.extend(records)
            return records, tuple(fresh)

    def mark_delivered(self, conversation_id: str, keys: Sequence[str]) -> None:
        """Restore exposures recorded elsewhere (a file ledger), without delivery records."""
        with self._lock:
            self._delivered.setdefault(conversation_id, set()).update(keys)

    def was_delivered(self, conversation_id: str, key: str) -> bool:
        with self._lock:
            return key in self._delivered.get(conversation_id, ())

    @property
    def deliveries(self) -> tuple[Delivery, ...]:
        """Every recorded delivery, in the order it was handed over."""
        with self._lock:
            return tuple(self._deliveries)


class ReceiptRing:
    """Bounded tool receipts keeping the first ``capacity // 2`` and the latest ones."""

    def __init__(self, capacity: int = RECEIPT_CAPACITY, clock: Callable[[], int] = _now_ms):
        if capacity < 2:
            raise RecallError(f"receipt capacity is {capacity!r}; a receipt ring needs at least 2")
        self._clock = clock
        self._lock = allocate_lock()
        self._head_size = capacity // 2
        self._head: list[ToolReceipt] = []
        self._tail: deque[ToolReceipt] = deque(maxlen=capacity - self._head_size)
        self._seq = 0
        self._dropped = 0

    def add(self, tool: str, paths: Sequence[str], execution: str | None = None) -> ToolReceipt:
        from active_memory.models.runs import ToolReceipt  # see the module note

        with self._lock:
            self._seq += 1
            receipt = ToolReceipt(
                seq=self._seq,
                execution=execution,
                time_ms=self._clock(),
                tool=tool[:128],
                paths=tuple(paths[:RECEIPT_PATHS]),
            )
            if len(self._head) < self._head_size:
                self._head.append(receipt)
            else:
                if len(self._tail) == self._tail.maxlen:
                    self._dropped += 1
                self._tail.append(receipt)
            return receipt

    @property
    def dropped(self) -> int:
        """How many receipts between the first and the latest were not kept."""
        with self._lock:
            return self._dropped

    def snapshot(self) -> tuple[ToolReceipt, ...]:
        with self._lock:
            return (*self._head, *self._tail)
