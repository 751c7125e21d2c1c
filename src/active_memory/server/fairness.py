"""What keeps one token from stalling its tenant: per-token rates, and the refusals a
publication gets before it may wait for the tenant's writers' lock.

A token's requests and request bytes are metered by two token buckets (:class:`TokenRates`):
a request that would overdraw either is answered ``429`` with ``Retry-After`` before its body is
read (the bytes are charged from ``Content-Length``; a body without one is charged once read).
A publication is then refused before the lock when it names more mutations than
``max_publication_mutations`` or when, whatever else commits meanwhile, it would grow the
tenant's live lessons or rows past the store's limits (:func:`capacity_refusal`): the check
under the lock is still the one that counts, this one only spares the lock a batch that cannot
commit. Both are first decided on counts read from the raw JSON (:func:`raw_counts`, a scan of
the bytes), so a batch refused for its size or the store's capacity costs neither a parse nor a
validation, and again on the validated batch.
"""

from __future__ import annotations

import math
import re
import threading
import time
from dataclasses import dataclass

from active_memory.models.changes import Publication
from active_memory.store.results import StoreLimits
from active_memory.store.writes import Capacity

__all__ = [
    "BatchCounts",
    "RateSettings",
    "TokenRates",
    "capacity_refusal",
    "raw_counts",
    "retry_after",
    "token_rates",
]

_IDLE_BUCKETS = 10_000  # past this many tokens seen, full (idle) buckets are forgotten


@dataclass(frozen=True, slots=True)
class RateSettings:
    """Per token: sustained requests and bytes per second, and the bursts allowed above them.
    None switches a meter off."""

    requests_per_s: float | None = 200.0
    request_burst: int = 400
    # Request bytes, not answer bytes: a snapshot asks in a few hundred bytes, a publication of
    # a postmortem in a few KB; a megabyte a second is a large import's pace.
    bytes_per_s: int | None = 1024 * 1024
    byte_burst: int = 8 * 1024 * 1024


def token_rates(requests_per_s: float, bytes_per_s: int, max_request_bytes: int) -> RateSettings:
    """The settings of ``server serve``'s two rates (0: off): a burst of twice the request rate,
    and of four seconds of the byte rate but never less than the largest request."""
    return RateSettings(
        requests_per_s=requests_per_s or None,
        request_burst=max(1, math.ceil(2 * requests_per_s)),
        bytes_per_s=bytes_per_s or None,
        byte_burst=max(4 * bytes_per_s, max_request_bytes),
    )


@dataclass(slots=True)
class _Bucket:
    level: float
    at: float

    def take(self, amount: float, rate: float, capacity: float, now: float) -> float:
        """Seconds until ``amount`` is available (0: taken now)."""
        self.level = min(capacity, self.level + (now - self.at) * rate)
        self.at = now
        if amount <= self.level:
            self.level -= amount
            return 0.0
        return (amount - self.level) / rate


class TokenRates:
    """The request and byte buckets of every credential seen, thread-safe."""

    def __init__(self, settings: RateSettings) -> None:
        self.settings = settings
        self._requests: dict[str, _Bucket] = {}
        self._bytes: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def admit_request(self, credential_id: str, declared_bytes: int) -> float:
        """Charge one request and its declared bytes; the seconds to wait first when either
        bucket cannot pay (nothing is charged then), else 0."""
        settings = self.settings
        now = time.monotonic()
        with self._lock:
            wait = 0.0
            if settings.requests_per_s is not None:
                bucket = self._bucket(self._requests, credential_id, settings.request_burst, now)
                wait = bucket.take(1, settings.requests_per_s, settings.request_burst, now)
            if wait == 0.0 and declared_bytes:
                wait = self._take_bytes(credential_id, declared_bytes, now)
                if wait and settings.requests_per_s is not None:
                    self._requests[credential_id].level += 1  # refund: nothing was served
            return wait

    def charge_bytes(self, credential_id: str, size: int) -> None:
        """Charge bytes already read (a body sent without ``Content-Length``): the bucket may
        go into debt, which the token's next requests wait out."""
        if self.settings.bytes_per_s is None:
            return
        now = time.monotonic()
        with self._lock:
            bucket = self._bucket(self._bytes, credential_id, self.settings.byte_burst, now)
            if bucket.take(size, self.settings.bytes_per_s, self.settings.byte_burst, now):
                bucket.level -= size

    def _take_bytes(self, credential_id: str, size: int, now: float) -> float:
        settings = self.settings
        if settings.bytes_per_s is None:
            return 0.0
        bucket = self._bucket(self._bytes, credential_id, settings.byte_burst, now)
        return bucket.take(size, settings.bytes_per_s, settings.byte_burst, now)

    def _bucket(self, table: dict[str, _Bucket], key: str, capacity: int, now: float) -> _Bucket:
        bucket = table.get(key)
        if bucket is None:
            if len(table) >= _IDLE_BUCKETS:
                self._forget_idle(table, capacity, now)
            bucket = table[key] = _Bucket(float(capacity), now)
        return bucket

    def _forget_idle(self, table: dict[str, _Bucket], capacity: int, now: float) -> None:
        # A bucket that has refilled completely is the same as a new one.
        rate = (
            self.settings.requests_per_s if table is self._requests else self.settings.bytes_per_s
        ) or math.inf
        for key in [k for k, b in table.items() if b.level + (now - b.at) * rate >= capacity]:
            del table[key]


def retry_after(wait_s: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(wait_s)))


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """What a publish body names: mutations, creations (expected revision 0), retirements."""

    mutations: int
    creations: int
    retirements: int

    @classmethod
    def of(cls, publication: Publication) -> BatchCounts:
        mutations = publication.mutations
        return cls(
            len(mutations),
            sum(m.expected_revision == 0 and m.op == "upsert" for m in mutations),
            sum(m.op == "retire" for m in mutations),
        )


# Keys as they appear in the raw JSON. A string value cannot hold an unescaped quote, so in a
# valid body each match is a key of a mutation (one ``expected_revision`` per mutation); a key
# spelt with escapes is missed, and that body is counted exactly once validated instead.
_EXPECTED = re.compile(rb'"expected_revision"\s*:\s*(-?\d+)')
_RETIRE = re.compile(rb'"op"\s*:\s*"retire"')


def raw_counts(raw: bytes) -> BatchCounts:
    """The counts of a publish body read from its bytes, before (and far cheaper than) the
    models' validation: what the service refuses a batch for before it costs a parse."""
    expected = _EXPECTED.findall(raw)
    return BatchCounts(
        len(expected), sum(value == b"0" for value in expected), len(_RETIRE.findall(raw))
    )


def capacity_refusal(counts: BatchCounts, capacity: Capacity, limits: StoreLimits) -> str | None:
    """Why a batch of ``counts`` cannot commit on a store at ``capacity``, or None.

    Counts what the batch itself adds at least: each creation adds a live lesson and a row,
    each retirement removes a live lesson. Another writer committing first can only make the
    batch conflict, or free room that a retry would then find."""
    creates, retires = counts.creations, counts.retirements
    checks = (
        (capacity.live, capacity.live + creates - retires, limits.max_live, "live lessons",
         "retire some first"),
        (capacity.rows, capacity.rows + creates, limits.max_rows, "rows including tombstones",
         "move to a new store"),
    )  # fmt: skip
    for before, after, limit, what, advice in checks:
        if after > limit and after > before:
            return (
                f"capacity limit reached: the batch would leave {after} {what}; the limit is "
                f"{limit}; nothing was published, {advice}"
            )
    return None
