"""An assignment whose right-hand side is code holds a value, it is none: never redacted. A
literal credential assigned to the same names still is."""

from __future__ import annotations

import json

import pytest

from active_memory.evidence.redact import redact_text
from active_memory.screening.secrets import find_secret

CODE = [
    # The real line behind the issue, with optional chaining, as a Read result shows it.
    "const csrfToken = document.querySelector(\"meta[name='csrf-token']\")?.getAttribute("
    "\"content\")",
    "csrfToken = document?.querySelector('meta')",
    "const csrfToken = document\n  .querySelector('meta[name=csrf-token]')",
    "  params: { _csrf_token: csrfToken },",
    "headers = {authToken: authToken, userPassword: userPassword}",
    "const token = (await res.json()).token",
    "token = !token",
    "let apiKey = process.env.API_KEY ?? defaultKey",
    # A list of names after a credential word (an Elixir ETS row, as a Read result shows it).
    ":ets.insert(@table, {token, project_id, expires_at})",
    "[{^token, project_id, expires_at}] when expires_at > now ->",
    "def refresh(token, refresh_token, userName):",
    "case Tmux.launch_project_review(project.id, token, @review_port) do",
    "- Token is one-time and expires by TTL.",
    "The api key is short-lived.",
]  # fmt: skip

LITERALS = [
    ('csrfToken = "a8f3c9e1b7d24f6a9c0e5b3d8f1a2c4e"', "a8f3c9e1b7d24f6a9c0e5b3d8f1a2c4e"),
    ("csrfToken = a8f3c9e1b7d24f6a9c0e5b3d8f1a2c4e", "a8f3c9e1b7d24f6a9c0e5b3d8f1a2c4e"),
    ("DB_PASSWORD=supersecretvalue", "supersecretvalue"),
    ("password = correcthorsebattery", "correcthorsebattery"),
    ("password: !Fake2024x", "Fake2024x"),
    ("password = Summer2024\n.", "Summer2024"),
    # A comma after the credential word, then a value that is no list of names.
    ("the staging password, Hunter2Blue!", "Hunter2Blue"),
    ("the password, correctHorse9", "correctHorse9"),
    ("the password is correct_horse", "correct_horse"),
    ("the password is correct-horse", "correct-horse"),
    ("the token is s3cr3t-v4lue", "s3cr3t-v4lue"),
    ("the secret is hunter-blue-sky", "hunter-blue-sky"),
]


@pytest.mark.parametrize("line", CODE)
def test_code_on_the_right_is_kept(line: str) -> None:
    assert redact_text(line) == line
    assert redact_text(json.dumps(line)) == json.dumps(line)  # as a tool input carries it
    assert find_secret(line) is None


@pytest.mark.parametrize(("line", "secret"), LITERALS)
def test_a_literal_on_the_right_is_still_redacted(line: str, secret: str) -> None:
    redacted = redact_text(line)
    assert secret not in redacted
    assert "[redacted:" in redacted
