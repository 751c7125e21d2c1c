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
and the most recent half, with a count of those dropped in between. A delivery names the receipt
of the tool call it rode on (``receipt_seq``; None for a node prompt). A call the helper names
(its nonce, ``call_id``) gets one receipt however many answerers saw it: the broker that
answered too late and the store fallback that answered instead share it.

A ledger may be given a *store* (:class:`ExposureStore`: ``load(conversation)`` and
``record(conversation, keys)``) that keeps exposures beyond the process: the ``serve`` broker
and the hook fallback share one private file per conversation (the hook package's
``exposure_files``), so a restarted broker, or the other answerer, does
not deliver a card again. A tracked claim first loads what the store holds for its conversation
(so a card another process handed over meanwhile is not offered), and a commit records the new
keys there, after the in-memory ledger, outside its lock. A run of ``host`` is given its store
when its broker starts (a private folder of the run's, named to the helper), and reads back what
the store fallback handed over instead of it with :meth:`ExposureLedger.import_delivery`, so those
deliveries are the run's records too, each recorded once.

Deliveries and receipts are run-record models, imported when the first one is made rather than
with this module: the hook fallback (one call per process, its exposures kept in a file) keeps
neither (``ExposureLedger(records=False)``) and so never loads the models or pydantic. Locks
come from ``_thread``, the built-in module behind ``threading.Lock``, for the same reason.
"""

from __future__ import annotations

import itertools
import time
from _thread import allocate_lock

from active_memory.recall.card import card_key
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Iterable, Sequence
    from typing import Literal, Protocol, TypeAlias, TypeVar

    from active_memory.models.runs import Delivery, ToolReceipt
    from active_memory.recall.card import RecallCard

    Channel: TypeAlias = Literal["hook", "prompt"]
    _M = TypeVar("_M")

    class ExposureStore(Protocol):
        """Exposures kept outside the ledger (a file per conversation); neither call raises."""

        def load(self, conversation: str) -> Iterable[str]:
            """The ``id@revision`` keys recorded for ``conversation``."""

        def record(self, conversation: str, keys: Sequence[str]) -> None:
            """Add ``keys``, handed over to ``conversation``."""

else:
    # What collections re-exports: the package itself would add about 1.5 ms to every hook call.
    from _collections import deque


__all__ = [
    "CALL_WINDOW",
    "RECEIPT_CAPACITY",
    "RECEIPT_PATHS",
    "Claim",
    "ExposureLedger",
    "ReceiptRing",
]

RECEIPT_CAPACITY = 512
_NONE: frozenset[str] = frozenset()
RECEIPT_PATHS = 8
# Call ids remembered to share a receipt: far more than the calls in flight at once.
CALL_WINDOW = 4096


def _now_ms() -> int:
    return int(time.time() * 1000)


_new = object.__new__
_assign = object.__setattr__
_models: tuple[type[Delivery], type[ToolReceipt]] | None = None


def _run_models() -> tuple[type[Delivery], type[ToolReceipt]]:
    """The run-record models, imported at the first record (see the module note) and kept: an
    import statement costs a couple of microseconds even when the module is loaded."""
    global _models
    if _models is None:
        from active_memory.models.runs import Delivery, ToolReceipt

        _models = (Delivery, ToolReceipt)
    return _models


def _text(value: object) -> bool:
    return type(value) is str and value != ""


def _count(value: object, least: int = 0) -> bool:
    return type(value) is int and value >= least


def _trusted(model: type[_M], values: dict[str, object]) -> _M:
    """``model`` holding ``values``, which the caller checked as the model's strict validators
    would (every field given, each of its type and within its bounds), built without running
    them: a tool call makes one receipt and a delivery or two, and validating values this
    module made itself cost as much as the rest of the call. Whatever the caller cannot vouch
    for goes through the model's own construction, and fails there as it always did.
    ``tests/recall/test_exposure.py`` holds the two ways of building equal."""
    instance = _new(model)
    _assign(instance, "__dict__", values)
    _assign(instance, "__pydantic_fields_set__", set(values))
    _assign(instance, "__pydantic_extra__", None)
    _assign(instance, "__pydantic_private__", None)
    return instance


def _deliveries(
    model: type[Delivery],
    lessons: Sequence[tuple[str, int]],
    node_id: str,
    conversation_id: str,
    channel: Channel,
    execution: str | None,
    time_ms: int | None,
    receipt_seq: int | None,
) -> tuple[Delivery, ...]:
    """One delivery record per ``(lesson id, revision)``, the other fields shared: those are
    checked once for the whole answer, each lesson's own two fields once per record."""
    shared = (
        _text(node_id)
        and _text(conversation_id)
        and channel in ("hook", "prompt")
        and (execution is None or type(execution) is str)
        and (time_ms is None or _count(time_ms))
        and (receipt_seq is None or _count(receipt_seq))
    )
    records = []
    for lesson_id, revision in lessons:
        values: dict[str, object] = {
            "lesson_id": lesson_id, "revision": revision, "node_id": node_id,
            "conversation_id": conversation_id, "channel": channel, "execution": execution,
            "time_ms": time_ms, "receipt_seq": receipt_seq,
        }  # fmt: skip
        trusted = shared and _text(lesson_id) and _count(revision, 1)
        records.append(_trusted(model, values) if trusted else model(**values))
    return tuple(records)


_STR_ONLY = {str}


def _receipt(model: type[ToolReceipt], values: dict[str, object]) -> ToolReceipt:
    execution, paths = values["execution"], values["paths"]
    if (
        _count(values["seq"])
        and _count(values["time_ms"])
        and _text(values["tool"])
        and (execution is None or type(execution) is str)
        and type(paths) is tuple
        and (not paths or set(map(type, paths)) == _STR_ONLY)  # no generator: a call each
    ):
        return _trusted(model, values)
    return model(**values)


class Claim:
    """Cards reserved for one answer in flight; ``commit`` once handed over, else ``release``.

    ``settled`` turns True, under the ledger's lock, at the first of the two.
    """

    __slots__ = ("channel", "conversation_id", "execution", "keys", "ledger", "lessons",
                 "node_id", "number", "receipt_seq", "settled", "shared", "tracked")  # fmt: skip

    # ``shared``: kept in the ledger's store too (see ExposureLedger.claim); ``keys``: the
    # card_key of each of ``lessons``, computed once at the claim.
    def __init__(self, ledger: ExposureLedger, number: int, conversation_id: str, node_id: str,
                 execution: str | None, channel: Channel, lessons: tuple[RecallCard, ...],
                 tracked: bool = True, settled: bool = False, receipt_seq: int | None = None,
                 shared: bool = True, keys: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.ledger = ledger
        self.number = number
        self.conversation_id = conversation_id
        self.node_id = node_id
        self.execution = execution
        self.channel = channel
        self.lessons = lessons
        self.tracked = tracked
        self.settled = settled
        self.receipt_seq = receipt_seq
        self.shared = shared
        self.keys = keys

    def __repr__(self) -> str:
        return f"Claim({self.number}, {self.conversation_id!r}, {list(self.keys)!r})"

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
        # The keys with a delivery record, per conversation: a key known delivered from the
        # store alone (another process handed it over) may still be imported as a record.
        self._recorded: dict[str, set[str]] = {}
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
        receipt_seq: int | None = None,
        shared: bool = True,
    ) -> Claim:
        """Offer ``choose`` the lessons this conversation has neither received nor claimed.

        ``choose`` runs under the ledger lock (it renders; it must be quick) and returns the
        lessons it will hand over; those are claimed until the returned claim is settled. With
        no lessons ``choose`` is not called, and the claim comes back settled (empty). An
        untracked claim (``tracked=False``) is offered every lesson and remembers nothing.
        ``shared=False`` keeps the conversation out of the store: one no other process can
        answer (an agent framework's, in this process) need not pay a file per conversation.
        """
        if not lessons:
            # Most tool calls match nothing: nothing to claim, to render or ever to record.
            return Claim(self, 0, conversation_id, node_id, execution, channel, (),
                         tracked=tracked, settled=True, receipt_seq=receipt_seq,
                         shared=shared)  # fmt: skip
        use_store = self.store is not None and tracked and shared
        stored = self.store.load(conversation_id) if use_store and self.store else ()
        with self._lock:
            if not tracked:
                chosen = tuple(choose(tuple(lessons)))
                number = next(self._numbers)
                return Claim(self, number, conversation_id, node_id, execution, channel, chosen,
                             tracked=False, receipt_seq=receipt_seq,
                             keys=tuple(map(card_key, chosen)))  # fmt: skip
            delivered = self._delivered.get(conversation_id, _NONE)
            if stored:
                delivered = self._delivered.setdefault(conversation_id, set())
                delivered.update(stored)
            claimed = self._claimed.setdefault(conversation_id, {})
            if delivered or claimed:
                eligible = tuple(
                    lesson
                    for lesson in lessons
                    if (key := card_key(lesson)) not in delivered and key not in claimed
                )
            else:  # a conversation's first cards: nothing to leave out
                eligible = tuple(lessons)
            chosen = tuple(choose(eligible))
            keys = tuple(map(card_key, chosen))
            number = next(self._numbers)
            for key in keys:
                claimed[key] = number
        return Claim(self, number, conversation_id, node_id, execution, channel, chosen,
                     receipt_seq=receipt_seq, shared=shared, keys=keys)  # fmt: skip

    def _settle(self, claim: Claim, *, delivered: bool) -> tuple[Delivery, ...]:
        if claim.settled:  # it only ever turns True: no lock needed to see it did
            return ()
        records, fresh = self._settle_locked(claim, delivered=delivered)
        if fresh and claim.tracked and claim.shared and self.store is not None:
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
            conversation, keys = claim.conversation_id, claim.keys
            if claim.tracked:
                claimed = self._claimed.get(conversation)
                if claimed:
                    number = claim.number
                    for key in keys:
                        if claimed.get(key) == number:
                            del claimed[key]
            if not delivered or not claim.lessons:
                return (), ()
            if claim.tracked:
                known = self._delivered.get(conversation)
                if known is None:
                    known = self._delivered[conversation] = set()
            else:
                known = set()
            if known or len(keys) > 1:
                # Only what the conversation lacks, each key once.
                fresh = {key: lesson for key, lesson in zip(keys, claim.lessons, strict=True)
                         if key not in known}  # fmt: skip
                fresh_keys = tuple(fresh)
                fresh_lessons = tuple(fresh.values())
            else:  # one card, to a conversation that had none: the usual answer
                fresh_keys, fresh_lessons = keys, claim.lessons
            known.update(fresh_keys)
            if not self._records or not fresh_keys:
                return (), fresh_keys
            pairs = [(lesson.id, lesson.revision) for lesson in fresh_lessons]
            records = self._record_locked(conversation, pairs, claim.node_id, claim.execution,
                                          claim.channel, claim.receipt_seq, self._clock(),
                                          tracked=claim.tracked,
                                          keys=fresh_keys)  # fmt: skip
            return records, fresh_keys

    def _record_locked(
        self,
        conversation_id: str,
        lessons: Sequence[tuple[str, int]],
        node_id: str,
        execution: str | None,
        channel: Channel,
        receipt_seq: int | None,
        time_ms: int,
        *,
        tracked: bool,
        keys: Sequence[str] | None = None,
    ) -> tuple[Delivery, ...]:
        """Delivery records of ``lessons``; ``keys`` are their ``id@revision`` when known."""
        delivery = (_models or _run_models())[0]
        records = _deliveries(delivery, lessons, node_id, conversation_id, channel, execution,
                              time_ms, receipt_seq)  # fmt: skip
        if tracked:
            recorded = self._recorded.get(conversation_id)
            if recorded is None:
                recorded = self._recorded[conversation_id] = set()
            recorded.update(keys if keys is not None else (r.key for r in records))
        self._deliveries.extend(records)
        return records

    def import_delivery(
        self,
        conversation_id: str,
        keys: Sequence[str],
        *,
        node_id: str,
        execution: str | None,
        receipt_seq: int | None,
        time_ms: int,
        tracked: bool = True,
    ) -> tuple[Delivery, ...]:
        """Record ``keys`` (``id@revision``) another process handed to ``conversation_id`` (the
        store fallback, answering in the broker's place): delivered from now on, and a delivery
        record each unless this ledger already holds one for that key and conversation."""
        lessons: list[tuple[str, int]] = []
        with self._lock:
            recorded = self._recorded.get(conversation_id, set()) if tracked else set()
            delivered = self._delivered.setdefault(conversation_id, set()) if tracked else set()
            for key in dict.fromkeys(keys):
                lesson_id, _, revision = key.partition("@")
                if key in recorded or not revision.isdigit():
                    continue
                delivered.add(key)
                lessons.append((lesson_id, int(revision)))
            if not self._records or not lessons:
                return ()
            return self._record_locked(conversation_id, lessons, node_id, execution, "hook",
                                       receipt_seq, time_ms, tracked=tracked)  # fmt: skip

    def attach_store(self, store: ExposureStore) -> None:
        """Keep exposures in ``store`` from now on, with those of tracked conversations so far."""
        with self._lock:
            known = {conversation: tuple(keys) for conversation, keys in self._delivered.items()}
            self.store = store
        for conversation, keys in known.items():
            if keys:
                store.record(conversation, keys)

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
            # Imported where raised: the hook path loads no exception tree (about 1 ms a call).
            from active_memory.errors import RecallError

            raise RecallError(f"receipt capacity is {capacity!r}; a receipt ring needs at least 2")
        self._clock = clock
        self._lock = allocate_lock()
        self._head_size = capacity // 2
        self._head: list[ToolReceipt] = []
        self._tail: deque[ToolReceipt] = deque(maxlen=capacity - self._head_size)
        self._seq = 0
        self._dropped = 0
        self._calls: dict[str, ToolReceipt] = {}

    def add(
        self,
        tool: str,
        paths: Sequence[str],
        execution: str | None = None,
        *,
        call_id: str | None = None,
        time_ms: int | None = None,
    ) -> ToolReceipt:
        """A receipt for one tool call; the one already made when ``call_id`` has one."""
        receipt_model = (_models or _run_models())[1]
        with self._lock:
            if call_id is not None and call_id in self._calls:
                return self._calls[call_id]
            self._seq += 1
            receipt = _receipt(receipt_model, {
                "seq": self._seq, "execution": execution,
                "time_ms": self._clock() if time_ms is None else time_ms,
                "tool": tool[:128], "paths": tuple(paths[:RECEIPT_PATHS]),
            })  # fmt: skip
            if call_id is not None:
                self._calls[call_id] = receipt
                if len(self._calls) > CALL_WINDOW:  # the oldest call ids (dicts keep order)
                    del self._calls[next(iter(self._calls))]
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
