from __future__ import annotations

import tracemalloc

import pytest

from active_memory.evidence.redact import (
    _ENTRY_CHARS,
    REDACTED,
    RedactionMemo,
    find_secrets,
    is_secret_key,
    redact_text,
    redact_value,
)

FAKE = {
    "anthropic-key": "sk-ant-api03-EXAMPLEONLY-not-a-real-key-000000000000",
    "openai-key": "sk-proj-EXAMPLEONLYnotarealkey0000000000",
    "aws-access-key": "AKIAEXAMPLEONLY00000",
    "github-token": "ghp_EXAMPLEONLYnotarealtoken000000000000",
    "slack-token": "xoxb-000000000000-EXAMPLEONLY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJleGFtcGxlIn0.c2lnbmF0dXJlZXhhbXBsZQ",
    "bearer-token": "Bearer EXAMPLEONLYbearertoken0000",
    "private-key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nEXAMPLEONLY\n-----END OPENSSH PRIVATE KEY-----"
    ),
}


@pytest.mark.parametrize(("kind", "secret"), sorted(FAKE.items()))
def test_common_key_formats_are_found_and_redacted_in_text(kind: str, secret: str) -> None:
    text = f"before {secret} after"
    assert kind in find_secrets(text)
    redacted = redact_text(text)
    assert secret not in redacted
    assert f"[redacted:{kind}]" in redacted
    assert redacted.startswith("before ")
    assert redacted.endswith(" after")


def test_assignment_keeps_the_name_and_drops_the_value() -> None:
    text = "export APP_API_TOKEN=abcdef123456 && password: 'hunter2hunter2'"
    redacted = redact_text(text)
    assert "abcdef123456" not in redacted
    assert "hunter2hunter2" not in redacted
    assert "APP_API_TOKEN=" in redacted
    assert find_secrets(text) == ["password-assignment"]


def test_counts_and_ordinary_prose_are_not_secrets() -> None:
    text = "max_tokens=4096 nodeInjectionTokens: 16000; see configure_token_refresh in config.py"
    assert find_secrets(text) == []
    assert redact_text(text) == text


def test_a_truncated_private_key_is_redacted_to_the_end() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    assert redact_text(text) == "key:\n[redacted:private-key]"
    assert redact_text("AKCAQEA\n-----END RSA PRIVATE KEY-----\nrest") == (
        "[redacted:private-key]\nrest"
    )


@pytest.mark.parametrize(
    "name",
    ["token", "GITHUB_TOKEN", "apiKey", "api_key", "x-api-key", "APIKEY", "client_secret",
     "Password", "authorization", "credentials", "privateKey", "AWS_SECRET_ACCESS_KEY"],
)  # fmt: skip
def test_secret_key_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name", ["max_tokens", "nodeInjectionTokens", "model", "baseUrl", "keyword_groups", "monkey"]
)
def test_non_secret_key_names(name: str) -> None:
    assert not is_secret_key(name)


def test_redact_value_replaces_secret_keys_at_any_depth_and_patterns_everywhere() -> None:
    runtime = {
        "providers": {"anthropic": {"apiKey": "anything at all", "model": "m"}},
        "servers": [{"name": "db", "env": {"DB_PASSWORD": 12345}}],
        "notes": ["call with " + FAKE["github-token"]],
        "limits": {"max_tokens": 100},
        "token": None,
    }
    out = redact_value(runtime)
    assert out["providers"]["anthropic"] == {"apiKey": REDACTED, "model": "m"}
    assert out["servers"][0]["env"]["DB_PASSWORD"] == REDACTED
    assert out["notes"] == ["call with [redacted:github-token]"]
    assert out["limits"] == {"max_tokens": 100}
    assert out["token"] is None
    assert runtime["providers"]["anthropic"]["apiKey"] == "anything at all"


def test_redact_value_without_keys_only_applies_patterns() -> None:
    graph = {"nodes": [{"id": "n", "token": "plain", "instructions": FAKE["openai-key"]}]}
    out = redact_value(graph, keys=False)
    assert out["nodes"][0]["token"] == "plain"
    assert out["nodes"][0]["instructions"] == "[redacted:openai-key]"


def test_a_text_without_a_credential_comes_back_from_the_memo() -> None:
    memo = RedactionMemo(max_chars=8192)
    text = "plain words about the cache"
    assert memo.redact(text) is text
    assert memo.held() == [text]
    assert memo.redact(text) is text


def test_a_text_with_a_credential_is_redacted_every_time_and_never_held() -> None:
    memo = RedactionMemo(max_chars=8192)
    text = f"deploy with {FAKE['github-token']} then"
    for _ in range(2):
        assert memo.redact(text) == "deploy with [redacted:github-token] then"
    assert memo.held() == []


def test_the_memo_holds_at_most_its_characters_dropping_the_least_recently_used() -> None:
    memo = RedactionMemo(max_chars=16 * (32 + _ENTRY_CHARS))  # sixteen of the texts below
    texts = [f"line {n:02d} " * 4 for n in range(40)]  # 32 characters each, no credential
    for text in texts[:16]:
        memo.redact(text)
    memo.redact(texts[0])  # used again: the oldest is now texts[1]
    memo.redact(texts[16])
    assert memo.held() == [*texts[2:16], texts[0], texts[16]]
    for text in texts:
        memo.redact(text)
    assert memo.held() == texts[-16:]


def test_a_text_too_large_for_the_memo_is_scanned_and_not_held() -> None:
    memo = RedactionMemo(max_chars=16 * (32 + _ENTRY_CHARS))  # holds no text over 32 characters
    assert memo.redact("y" * 32) == "y" * 32
    assert memo.redact("x" * 33) == "x" * 33
    assert memo.held() == ["y" * 32]


def test_a_memo_of_short_texts_holds_about_its_characters_in_memory() -> None:
    # A file's lines, redacted one at a time by the specialists' tools, are short: what holding
    # each costs (its header, the memo's slot) counts against the bound, not its characters alone.
    redact_text("warm up")  # the formats are compiled once, outside what is measured
    memo = RedactionMemo(max_chars=64 * 1024)
    # 4,000 texts are ten times what this memo holds (about 390), so it has long been full and
    # dropping; a memo that counted characters alone would hold all 4,000 (about 520 KB, four
    # times the bound). Each text is traced, so 20,000 cost five times the CPU for the same check.
    tracemalloc.start()
    try:
        for n in range(4_000):
            memo.redact(f"x = {n}")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2 * 64 * 1024, held
    assert 0 < len(memo.held()) <= 64 * 1024 // _ENTRY_CHARS
