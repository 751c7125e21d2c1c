"""The memory service's limits per request and per token, checked once when the service is
built (a bad value is one ConfigError naming the ``server serve`` option to fix)."""

from __future__ import annotations

from dataclasses import dataclass, field

from active_memory.errors import ConfigError
from active_memory.server.fairness import RateSettings

__all__ = ["DEFAULT_SERVICE_LIMITS", "ServiceLimits"]


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    max_request_bytes: int = 8 * 1024 * 1024
    max_response_bytes: int = 96 * 1024 * 1024
    request_timeout_s: float = 10.0
    max_publication_mutations: int = 1000
    write_hold_s: float = 5.0
    rates: RateSettings = field(default_factory=RateSettings)

    def __post_init__(self) -> None:
        if self.max_publication_mutations < 1:
            raise ConfigError("--max-publication-mutations", "must be at least 1")
        if not self.write_hold_s > 0:
            raise ConfigError("--write-hold", "must be a positive number of seconds")
        rates = self.rates
        if rates.requests_per_s is not None and not (
            rates.requests_per_s > 0 and rates.request_burst >= 1
        ):
            raise ConfigError(
                "--token-requests-per-s", "must be positive, with a burst of at least 1"
            )
        if rates.bytes_per_s is not None and not (
            rates.bytes_per_s > 0 and rates.byte_burst >= self.max_request_bytes
        ):
            # A burst under the largest body would refuse such a body forever.
            raise ConfigError(
                "--token-bytes-per-s",
                f"must be positive, with a burst of at least --max-request-bytes "
                f"({self.max_request_bytes})",
            )


DEFAULT_SERVICE_LIMITS = ServiceLimits()
