"""Who may use the browser: a one-time token, then a session cookie; CSRF on every POST.

The page listens on a loopback address only (:func:`check_loopback`), but other users of the
machine and other web pages in the user's own browser can reach loopback too, so:

* ``active-memory ui`` prints a URL carrying a one-time token. Opening it trades the token for
  a session cookie (``HttpOnly``, ``SameSite=Strict``) and spends the token: a second use, a
  copied URL from the shell history, gets 403.
* every other request needs that cookie; without it, 403. Secrets are kept only as SHA-256
  digests and compared with :func:`hmac.compare_digest`, in constant time.
* a POST (approve, reject) must carry the session's CSRF token in its form, and an ``Origin``
  header, when sent, must be this server's own.
* the ``Host`` header must name the loopback address the server listens on, so a DNS name
  rebound to 127.0.0.1 by a hostile page is refused (DNS rebinding).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import threading

from active_memory.errors import ConfigError

__all__ = ["SESSION_COOKIE", "Sessions", "check_loopback"]

SESSION_COOKIE = "am_ui_session"


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def check_loopback(host: str) -> str:
    """``host`` when it is a loopback address (``127.0.0.1``, ``::1`` or ``[::1]``, ``localhost``),
    as the address itself (``::1``);
    ConfigError otherwise: the browser serves one user on this machine, never a network."""
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise ConfigError(
            "host",
            f"{host!r} is not an IP address; the browser listens on a loopback "
            "address only (127.0.0.1, ::1 or localhost)",
        ) from None
    if not address.is_loopback:
        raise ConfigError(
            "host",
            f"{host!r} is not a loopback address; the browser listens on 127.0.0.1, "
            "::1 or localhost only, so nothing on the network can reach it",
        )
    # Unbracketed and canonical: the server brackets an IPv6 address itself when it shows it.
    return str(address)


class Sessions:
    """The one-time token, the sessions it opened (at most one) and their CSRF tokens."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(32)
        self._token_digest: bytes | None = _digest(self.token)
        self._sessions: dict[bytes, str] = {}  # session digest -> CSRF token
        self._lock = threading.Lock()

    def redeem(self, given: str) -> tuple[str, str] | None:
        """A new session id and its CSRF token for the right, unspent token; None otherwise.
        The token is spent by its first correct use."""
        probe = _digest(given)
        with self._lock:
            expected = self._token_digest
            # Compared even when spent, against a dummy, so timing says nothing.
            ok = hmac.compare_digest(probe, expected if expected is not None else _digest("-"))
            if not ok or expected is None:
                return None
            self._token_digest = None
            session = secrets.token_urlsafe(32)
            csrf = secrets.token_urlsafe(32)
            self._sessions[_digest(session)] = csrf
            return session, csrf

    def csrf_for(self, session: str | None) -> str | None:
        """The CSRF token of a valid session cookie; None for a missing or unknown one."""
        if not session:
            return None
        probe = _digest(session)
        with self._lock:
            found = None
            for known, csrf in self._sessions.items():
                if hmac.compare_digest(probe, known):
                    found = csrf
            return found

    @staticmethod
    def csrf_matches(expected: str, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(_digest(expected), _digest(given))
