"""A bare ``NAME=Value`` shell or env assignment, and "the token is x-y-z" in prose, hand over a
literal: redacted even when the value is letters only, camelCase or hyphenated words. Only the
assignment's own code context (``const x = …``, ``{x: y}``, a call on the right) makes a value
a variable (tests/screening/test_code_assignments.py)."""

from __future__ import annotations

import json

import pytest

from active_memory.evidence.redact import redact_text
from active_memory.screening.secrets import find_secret, redact_credentials

LITERALS = [
    ("password=SuperSecret", "SuperSecret"),
    ("export DB_PASSWORD=MySecretPass", "MySecretPass"),
    ("PGPASSWORD=postgresPassword", "postgresPassword"),
    ("export GITHUB_TOKEN=MyGithubToken", "MyGithubToken"),
    ("api_key=AbcdefGhijkToken", "AbcdefGhijkToken"),
    ("the token is purple-monkey-dishwasher", "purple-monkey-dishwasher"),
    ("password=SuperSecret\n.foo", "SuperSecret"),
    # Prose after a literal is no call on it.
    ("password=SuperSecret (the staging one)", "SuperSecret"),
    ("  password: SuperSecret", "SuperSecret"),  # a YAML key, not an object literal
]


@pytest.mark.parametrize(("line", "secret"), LITERALS)
def test_a_bare_literal_is_redacted_in_evidence(line: str, secret: str) -> None:
    for text in (line, json.dumps(line)):  # as a transcript or a tool input carries it
        redacted = redact_text(text)
        assert secret not in redacted
        assert "[redacted:" in redacted


@pytest.mark.parametrize(("line", "secret"), LITERALS)
def test_a_bare_literal_is_redacted_by_the_screening_formats(line: str, secret: str) -> None:
    redacted, kinds = redact_credentials(line, lambda kind: f"<{kind}>")
    assert secret not in redacted
    assert kinds


def test_a_hyphenated_passphrase_after_the_token_is_refused_by_admission() -> None:
    assert find_secret("the token is purple-monkey-dishwasher") == "password_in_prose"
