"""The fairness rules as pure functions: token buckets, the mutation count read from raw JSON,
the capacity a batch must add at least, and the limits' own checks."""

from __future__ import annotations

import json

import pytest

from active_memory.errors import ConfigError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import fairness
from active_memory.server.fairness import (
    BatchCounts,
    RateSettings,
    TokenRates,
    capacity_refusal,
    raw_counts,
    retry_after,
    token_rates,
)
from active_memory.server.limits import ServiceLimits
from active_memory.store.results import StoreLimits
from active_memory.store.writes import Capacity
from factories import make_draft


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(fairness.time, "monotonic", ticking)
    return ticking


def test_a_token_spends_its_burst_then_waits_for_its_rate(clock: Clock) -> None:
    rates = TokenRates(RateSettings(requests_per_s=2.0, request_burst=3, bytes_per_s=None))
    assert [rates.admit_request("a", 0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rates.admit_request("a", 0) == pytest.approx(0.5)
    assert rates.admit_request("b", 0) == 0.0  # another token has its own bucket
    clock.now += 0.5
    assert rates.admit_request("a", 0) == 0.0


def test_a_request_refused_for_its_bytes_is_not_charged_a_request(clock: Clock) -> None:
    rates = TokenRates(RateSettings(requests_per_s=1.0, request_burst=1, bytes_per_s=100,
                                    byte_burst=1000))  # fmt: skip
    assert rates.admit_request("a", 1500) == pytest.approx(5.0)
    assert rates.admit_request("a", 900) == 0.0  # the request refused above cost nothing


def test_bytes_read_without_a_declared_length_put_the_token_in_debt(clock: Clock) -> None:
    rates = TokenRates(RateSettings(requests_per_s=None, bytes_per_s=100, byte_burst=1000))
    rates.charge_bytes("a", 1500)
    assert rates.admit_request("a", 1) == pytest.approx(5.01)
    clock.now += 5.1
    assert rates.admit_request("a", 1) == 0.0


def test_switched_off_meters_admit_everything(clock: Clock) -> None:
    rates = TokenRates(RateSettings(requests_per_s=None, bytes_per_s=None))
    assert all(rates.admit_request("a", 10**9) == 0.0 for _ in range(1000))


def test_retry_after_is_whole_seconds_and_at_least_one() -> None:
    assert [retry_after(w) for w in (0.01, 1.0, 1.2, 59.5)] == ["1", "1", "2", "60"]


def test_the_serve_options_give_bursts_no_smaller_than_the_largest_request() -> None:
    assert token_rates(200, 1 << 20, 8 << 20) == RateSettings()
    assert token_rates(200, 16 << 20, 8 << 20) == RateSettings(200, 400, 16 << 20, 64 << 20)
    assert token_rates(0, 1024, 8 << 20) == RateSettings(None, 1, 1024, 8 << 20)


def _publication(creates: int, retires: int = 0, updates: int = 0) -> Publication:
    mutations = [Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
                 for _ in range(creates)]  # fmt: skip
    mutations += [Mutation(op="retire", id=new_lesson_id(), expected_revision=1)
                  for _ in range(retires)]  # fmt: skip
    mutations += [Mutation(op="upsert", id=new_lesson_id(), expected_revision=3,
                           draft=make_draft()) for _ in range(updates)]  # fmt: skip
    return Publication(run_id="run", mutations=tuple(mutations))


def _counts(publication: Publication) -> BatchCounts:
    return BatchCounts.of(publication)


def test_a_batch_is_refused_when_what_it_adds_at_least_crosses_a_limit() -> None:
    limits = StoreLimits(max_live=10, max_rows=20)
    refusal = capacity_refusal(_counts(_publication(3)), Capacity(8, 8, 0), limits)
    assert refusal is not None
    assert "11 live lessons; the limit is 10" in refusal
    rows = capacity_refusal(_counts(_publication(3, retires=3)), Capacity(8, 19, 0), limits)
    assert rows is not None
    assert "22 rows including tombstones" in rows


def test_a_batch_that_frees_as_much_as_it_adds_or_only_updates_is_let_through() -> None:
    limits = StoreLimits(max_live=10, max_rows=100)
    freeing = _counts(_publication(2, retires=2))
    assert capacity_refusal(freeing, Capacity(10, 10, 0), limits) is None
    updating = _counts(_publication(0, updates=5))
    assert capacity_refusal(updating, Capacity(12, 12, 0), limits) is None


def test_the_raw_scan_counts_a_valid_body_exactly() -> None:
    publication = _publication(3, retires=2, updates=4)
    for dumped in (
        json.dumps({"publication": publication.model_dump(mode="json")}),
        json.dumps({"publication": publication.model_dump(mode="json")}, indent=2),
        publication.model_dump_json(),
    ):
        assert raw_counts(dumped.encode()) == BatchCounts(9, 3, 2)


def test_text_that_quotes_the_keys_is_not_counted() -> None:
    title = 'Set "expected_revision": 0 and "op": "retire" by hand'
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=2,
                        draft=make_draft(title))  # fmt: skip
    raw = Publication(run_id="r", mutations=(mutation,)).model_dump_json().encode()
    assert raw_counts(raw) == BatchCounts(1, 0, 0)


def test_keys_spelt_with_escapes_escape_the_scan_but_not_the_models() -> None:
    raw = Publication(run_id="r", mutations=_publication(2).mutations).model_dump_json()
    escaped = raw.replace('"expected_revision"', '"expected\\u005frevision"')
    assert raw_counts(escaped.encode()) == BatchCounts(0, 0, 0)
    assert _counts(Publication.parse_json(escaped.encode(), where="body")) == BatchCounts(2, 2, 0)


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"max_publication_mutations": 0}, "--max-publication-mutations"),
        ({"write_hold_s": 0.0}, "--write-hold"),
        ({"rates": RateSettings(requests_per_s=-1.0)}, "--token-requests-per-s"),
        ({"rates": RateSettings(bytes_per_s=100, byte_burst=1024)}, "--token-bytes-per-s"),
    ],
)
def test_a_bad_limit_is_one_config_error_naming_the_option(
    changes: dict[str, object], option: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{option}: "):
        ServiceLimits(**changes)  # type: ignore[arg-type]
