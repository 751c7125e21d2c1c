"""The service over HTTPS on loopback, with a certificate made for the test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from active_memory.errors import ConfigError, SnapshotError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import MemoryService, RunningService, ServeOptions, build_service
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.remote import RemoteBackend
from factories import REPOSITORY, make_draft


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def service(pg_database: str) -> MemoryService:
    return build_service(pg_database, pool_size=4)


def test_a_host_trusting_the_services_certificate_works_over_https(
    service: MemoryService, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate
    options = ServeOptions(port=0, tls_cert=cert, tls_key=key)
    try:
        with RunningService(service, options) as running:
            assert running.url.startswith("https://127.0.0.1:")
            token = service.credentials.create(tenant="tls", repository=REPOSITORY).token
            with RemoteBackend(running.url, token=token, ca_file=cert) as backend:
                mutation = Mutation(
                    op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
                )
                backend.publish(Publication(run_id="run", mutations=(mutation,)))
                request = SnapshotRequest(RunIdentity("run", REPOSITORY))
                assert len(backend.snapshot(request).lessons) == 1
            with (
                RemoteBackend(running.url, token=token) as untrusting,
                pytest.raises(SnapshotError, match="cannot be reached"),
            ):
                untrusting.snapshot(request)
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted as httpx trusts it
            with RemoteBackend(running.url, token=token) as trusting:
                assert len(trusting.snapshot(request).lessons) == 1
    finally:
        service.close()


def test_a_ca_file_that_is_not_a_certificate_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(ConfigError, match="not a PEM file"):
        RemoteBackend("https://127.0.0.1:1", token="amt_x", ca_file=bogus)


def test_a_trusted_certificate_made_for_another_host_is_refused(
    service: MemoryService, tmp_path: Path
) -> None:
    # The service client checks the certificate's name, not only its authority (http.client
    # does so only with a context that asks it to).
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp_path / "other.pem", tmp_path / "other-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=memory.example",
         "-addext", "subjectAltName=DNS:memory.example,IP:127.0.0.2"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        with RunningService(service, ServeOptions(port=0, tls_cert=cert, tls_key=key)) as running:
            token = service.credentials.create(tenant="tls2", repository=REPOSITORY).token
            request = SnapshotRequest(RunIdentity("run", REPOSITORY))
            with (
                RemoteBackend(running.url, token=token, ca_file=cert) as backend,
                pytest.raises(SnapshotError, match="cannot be reached"),
            ):
                backend.snapshot(request)
    finally:
        service.close()
