"""Credential formats beyond our own: detect-secrets' plugins and passwords named in prose."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from active_memory.evidence.redact import redact_text
from active_memory.screening import detectors
from active_memory.screening.secrets import detected_kinds, find_credential, find_secret
from start_probe import loaded_by

# Obviously fake values in each provider's real format.
DETECTED = [
    ("SG.FAKEfakeFAKEfake000000.FAKEfakeFAKEfake0000FAKEfakeFAKEfake0000000", "sendgrid_api_key"),
    ("fake0000fake0000fake0000fake0000-us12", "mailchimp_access_key"),
    ("123456789:FAKEfakeFAKEfakeFAKEfakeFAKEfake000", "telegram_bot_token"),
    ("SKfake0000fake0000fake0000fake0000", "twilio_api_key"),
    ("AccountKey=" + "FAKEfake" * 11, "azure_storage_account_access_key"),
    ("sq0csp-FAKEfakeFAKEfake0000FAKEfakeFAKEfake0000FAK", "square_oauth_secret"),
    ("https://hooks.slack.com/services/TFAKE0000/BFAKE0000/fakeFAKEfake0000", "slack_token"),
]
PROSE = [
    ("The staging admin password is Fake-Pass-2024! for the smoke test.", "Fake-Pass-2024"),
    ("Log in as admin / Fake0Admin99 on the staging console.", "Fake0Admin99"),
    ("Use Hunter2-fake-99 as the password for the seeded user.", "Hunter2-fake-99"),
    ("The passphrase for the signing key is Fake-Phrase-7781.", "Fake-Phrase-7781"),
    ("Set the Heroku API key to FAKE0000-fake-1111 in the pipeline.", "FAKE0000-fake-1111"),
    ("The database login is admin / Fake2024! on the staging server.", "Fake2024!"),
    ("The admin credentials are root:FakeS3cret99 on the staging host.", "FakeS3cret99"),
    ("The user and password for Jenkins are ci-bot / Fak3!Pass.", "Fak3!Pass"),
    ("SSH to the box as root, pass: Fak3b4dor&3.", "Fak3b4dor&3"),
]
NOT_PROSE = [
    "The password is stored in the vault.",
    "The password must be at least 12 characters long.",
    "password: ${DB_PASSWORD} keeps it out of git.",
    "Read the token from DB_TOKEN.",
    "The api key header is X-Api-Key.",
    "max tokens: 4096",
    "The primary key is user_id.",
    "The login is user:password for the demo.",
    "Credentials are stored in the vault under db/staging.",
    "The account is acme/billing-2024 on GitHub.",
    "The login flow is OAuth2 with PKCE.",
]


def test_the_detect_secrets_plugins_are_loaded_except_the_noisy_ones() -> None:
    kinds = detected_kinds()
    assert {"sendgrid_api_key", "mailchimp_access_key", "twilio_api_key"} <= set(kinds)
    assert not {"public_ip_ipv4", "json_web_token", "artifactory_credentials"} & set(kinds)


@pytest.mark.parametrize(("text", "kind"), DETECTED)
def test_provider_formats_are_refused_and_redacted(text: str, kind: str) -> None:
    assert find_credential(f"use {text} here") == kind
    redacted = redact_text(f"use {text} here")
    assert f"[redacted:{kind.replace('_', '-')}]" in redacted
    assert "FAKE" not in redacted.replace("[redacted", "")


@pytest.mark.parametrize(("text", "secret"), PROSE)
def test_a_password_named_in_prose_is_refused_and_redacted(text: str, secret: str) -> None:
    assert find_secret(text) == "password_in_prose"
    assert secret not in redact_text(text)


@pytest.mark.parametrize("text", NOT_PROSE)
def test_talk_about_passwords_is_not_a_password(text: str) -> None:
    assert find_secret(text) is None


def test_code_reaching_for_a_token_is_not_redacted() -> None:
    line = "const csrfToken = document.querySelector('meta[name=csrf-token]').content;"
    assert redact_text(line) == line
    assert redact_text("token = getToken(user)") == "token = getToken(user)"
    assert "fake0000token" not in redact_text("export APP_API_TOKEN=fake0000token")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hvs.FAKEfake0000FAKEfake1111FAKE", "vault_token"),
        ("hvb.FAKEfake0000FAKEfake1111FAKEfake", "vault_token"),
        ("hvr.FAKEfake0000FAKEfake1111FAKE", "vault_token"),
        ("0a1b2c3d4e5f67890a1b2c3d4e5f6789-1a2b3c4d-5e6f7a8b", "mailgun_key"),
    ],
)
def test_vault_tokens_and_newer_mailgun_keys_are_named_formats(text: str, kind: str) -> None:
    assert find_credential(f"the runner reads {text} at start") == kind
    redacted = redact_text(f"the runner reads {text} at start")
    assert redacted == f"the runner reads [redacted:{kind.replace('_', '-')}] at start"


@pytest.mark.parametrize("end", ["!", "?", "."])
def test_redaction_of_a_prose_password_takes_its_trailing_punctuation(end: str) -> None:
    redacted = redact_text(f"the password is Hunter2Blue{end} ok")
    assert redacted == "the password is [redacted:password-in-prose] ok"


def test_the_patterns_file_holds_what_the_installed_plugins_give() -> None:
    """For the release the file was written from, the file is those plugins' patterns. Any
    other release (detect-secrets has no upper bound: a runtime dependency) is read from its
    plugins, so a new release upstream changes what is screened, never turns this test red."""
    live = detectors.live_patterns()
    written = json.loads(
        resources.files("active_memory.screening").joinpath(detectors.PATTERNS_FILE).read_text()
    )
    # Compiled from the file or read from the plugins, every pattern equals the plugin's.
    assert detectors.plugin_patterns() == live
    if written["version"] == detectors.patterns_table(live)["version"]:
        rewrite = "PYTHONPATH=src python tests/screening/rewrite_detector_hints.py"
        assert written == detectors.patterns_table(live), f"the file is stale: run `{rewrite}`"


def test_another_release_of_detect_secrets_is_read_from_its_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(detectors, "_installed_version", lambda: "0.0.0-other")
    from_plugins = (detectors.PluginPattern("OtherDetector", "other", re.compile("other")),)
    monkeypatch.setattr(detectors, "live_patterns", lambda: from_plugins)
    detectors.plugin_patterns.cache_clear()
    try:
        assert detectors.plugin_patterns() == from_plugins
    finally:
        detectors.plugin_patterns.cache_clear()


def test_a_scan_imports_detect_secrets_only_for_another_release_than_the_files() -> None:
    # What docs/admission.md and docs/store.md say of the first scan (detect-secrets and the
    # requests its plugins' base imports stay unloaded); another release loads its plugins.
    written = json.loads(
        resources.files("active_memory.screening").joinpath(detectors.PATTERNS_FILE).read_text()
    )
    scan = "from active_memory.screening.secrets import find_secret\nfind_secret('key = x')"
    loaded = loaded_by(scan, ["detect_secrets", "requests"])
    if written["version"] == detectors.patterns_table(())["version"]:
        assert loaded == []
    else:
        assert "detect_secrets" in loaded
