"""One table of credential formats, checked against all three consumers of the shared list.

Admission refuses a card carrying any of them, evidence redaction keeps them from the provider,
and the provider recorder keeps them out of fixtures on disk. Every value is an obviously fake
one in the real format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelRequest,
    RequestLabels,
    UserMessage,
)
from active_memory.evidence.redact import find_secrets, redact_text, redact_value
from active_memory.screening.secrets import CREDENTIAL_KINDS, find_secret
from active_memory.screening.verdict import screen_texts
from active_memory.testing import RecordingProvider, ScriptedProvider, text_response

PUTTY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: fake-key\n"
    "Public-Lines: 1\nAAAAC3FAKEPUBLIC\nPrivate-Lines: 1\nAAAAIFAKEPRIVATEFAKE\n"
    "Private-MAC: 00fa4e00fa4e"
)

# (kind, text as it would appear, the part that must never survive)
FORMATS = [
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nFAKEKEYBODY\n-----END RSA PRIVATE KEY-----",
     "FAKEKEYBODY"),
    ("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nFAKEPGPBODY\n"
     "-----END PGP PRIVATE KEY BLOCK-----", "FAKEPGPBODY"),
    ("private_key", PUTTY, "AAAAIFAKEPRIVATEFAKE"),
    ("private_key", "FAKETAILBODY\n-----END OPENSSH PRIVATE KEY-----", "FAKETAILBODY"),
    ("anthropic_key", "sk-ant-api03-FAKEfake0000FAKEfake1111", "FAKEfake0000FAKEfake1111"),
    ("openai_key", "sk-proj-FAKE0000fake1111FAKE2222fake", "FAKE0000fake1111FAKE2222fake"),
    ("aws_access_key", "AKIAFAKEFAKE00000000", "AKIAFAKEFAKE00000000"),
    ("aws_access_key", "AGPAFAKEFAKE00000000", "AGPAFAKEFAKE00000000"),
    ("github_token", "ghp_FAKEfake0000FAKEfake1111FAKEfake2222", "FAKEfake0000FAKEfake1111"),
    ("github_token", "github_pat_FAKE0000fake1111FAKE2222fake", "FAKE0000fake1111FAKE2222"),
    ("slack_token", "xoxb-0000000000-FAKEfakeFAKE", "FAKEfakeFAKE"),
    ("slack_token", "xoxe-1-FAKEfakeFAKEfake0000", "FAKEfakeFAKEfake0000"),
    ("google_api_key", "AIzaFAKEfake0000FAKEfake1111FAKEfake222", "FAKEfake0000FAKEfake1111"),
    ("service_token", "npm_FAKEfake0000FAKEfake1111FAKEfake22", "FAKEfake0000FAKEfake1111"),
    ("service_token", "hf_FAKEfake0000FAKEfake1111FAKE", "FAKEfake0000FAKEfake1111"),
    ("service_token", "pypi-FAKEfake0000FAKEfake1111", "FAKEfake0000FAKEfake1111"),
    ("service_token", "sk_live_FAKEfake0000FAKEfake1111", "FAKEfake0000FAKEfake1111"),
    ("service_token", "glpat-FAKEfake0000FAKEfake11", "FAKEfake0000FAKEfake11"),
    ("jwt", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJmYWtlIn0.ZmFrZXNpZ25hdHVyZQ",
     "ZmFrZXNpZ25hdHVyZQ"),
    ("url_credentials", "https://deploy:fake-pass-0000@db.example.invalid/dump",
     "fake-pass-0000"),
    ("bearer_token", "Authorization: Bearer fake0000token1111fake", "fake0000token1111fake"),
    ("password_assignment", "DB_PASSWORD='fake-pass-1234'", "fake-pass-1234"),
    ("password_assignment", "export APP_API_TOKEN=fake0000token", "fake0000token"),
    ("password_assignment", '{"api_key": "fake-key-00000"}', "fake-key-00000"),
    ("mailgun_key", "key-FAKEfake0000FAKEfake0000FAKEfake", "FAKEfake0000FAKEfake0000"),
    ("mailgun_key", "0a1b2c3d4e5f67890a1b2c3d4e5f6789-1a2b3c4d-5e6f7a8b", "0a1b2c3d4e5f6789"),
    ("vault_token", "hvs.FAKEfake0000FAKEfake1111FAKE", "FAKEfake0000FAKEfake1111"),
    ("vault_token", "hvb.FAKEfake0000FAKEfake1111FAKEfake", "FAKEfake0000FAKEfake1111"),
    ("password_in_prose", "the staging password is Fake-Pass-0000 for now", "Fake-Pass-0000"),
    ("password_in_prose", "das Passwort lautet Fake-Wort-0000 seit Montag", "Fake-Wort-0000"),
    ("password_in_prose", "密码是 Fake0000mima", "Fake0000mima"),
    ("cli_password", "mysql -u root -pFake0000pass shop", "Fake0000pass"),
    ("cli_password", "PGPASSWORD=pglocal psql -h db", "pglocal"),
    ("cli_password", "curl -u admin:Fake0000curl https://ci.example.invalid", "Fake0000curl"),
]  # fmt: skip


def test_the_table_covers_every_credential_format() -> None:
    assert {kind for kind, _, _ in FORMATS} == set(CREDENTIAL_KINDS)


@pytest.mark.parametrize(("kind", "text", "secret"), FORMATS)
async def test_every_format_is_refused_redacted_and_scrubbed(
    tmp_path: Path, kind: str, text: str, secret: str
) -> None:
    surrounded = f"before {text} after"
    assert find_secret(surrounded) == kind

    redacted = redact_text(surrounded)
    assert secret not in redacted
    assert f"[redacted:{kind.replace('_', '-')}]" in redacted
    assert kind.replace("_", "-") in find_secrets(surrounded)
    assert redacted.endswith(" after")
    # A lone END line means the key began before the text did: everything up to it goes.
    cut_key = "-----END" in text and "-----BEGIN" not in text
    assert redacted.startswith("[redacted:" if cut_key else "before ")
    assert secret not in json.dumps(redact_value({"notes": [surrounded]}, keys=False))

    recorder = RecordingProvider(
        ScriptedProvider([text_response(surrounded)]), tmp_path / "exchanges.jsonl"
    )
    request = ModelRequest(
        model="model-test",
        system="",
        messages=(UserMessage(surrounded),),
        contract=AnswerContract(name="note", schema={"type": "object"}),
        labels=RequestLabels("repository_discovery", 0, 1),
    )
    await recorder.complete(request)
    recorded = recorder.save().read_text(encoding="utf-8")
    assert secret not in recorded
    # The answer keeps the kind, and the screen reads the mark as the credential it replaced.
    answer = json.loads(recorded)["response"]["text"]
    assert f"[redacted:{kind.replace('_', '-')}]" in answer
    assert screen_texts([answer]).codes == screen_texts([surrounded]).codes


def test_redaction_is_stable_when_applied_twice() -> None:
    text = " ".join(text for _, text, _ in FORMATS)
    once = redact_text(text)
    assert redact_text(once) == once


def test_high_entropy_is_refused_by_admission_but_ids_in_evidence_stay_readable() -> None:
    # Lesson ids and ULIDs look random; evidence must keep them so maintenance can cite them.
    text = "delivered lesson-01JD6Z4Q8N3V5W7X9Y1Z2A3B4C at revision 2"
    assert find_secret(text) == "high_entropy"
    assert redact_text(text) == text
