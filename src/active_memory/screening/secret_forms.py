"""Passwords handed to a command, and passwords named in prose in languages other than English.

Two kinds, each a pattern with a rule for when its value reads as a literal (placeholders,
variables and command substitutions are configuration talk, never credentials):

- ``cli_password``: a password on a command line or in the environment of one:
  ``mysql -pS3cret``, ``mysqldump --password=…``, ``sshpass -p …``, ``redis-cli -a …``,
  ``sqlcmd -P …``, ``docker login -p …``, any ``--…password …`` option (not
  ``--password-stdin``), ``curl -u user:…``, ``wget --http-password=…``, ``openssl … -passin
  pass:…``, ``keytool -storepass …``, ``ldapsearch -w …``, ``zip -P …``, ``7z -p…``,
  ``smbclient -U user%…``, ``htpasswd -b file user …``, and an environment variable a client
  reads its password from (``PGPASSWORD=…``, ``MYSQL_PWD=…``, ``SSHPASS=…``,
  ``REDISCLI_AUTH=…``, any ``…_PASSWORD=…``). A value of three or more characters counts,
  even a plain word: a command line hands it over as it is (``-proot``).
- ``password_in_prose``: "le mot de passe est …", "das Passwort lautet …", "la contraseña es
  …", "a senha é …", "la password è …", "het wachtwoord is …", "hasło to …", "şifre: …",
  "пароль: …", "密码是 …", "パスワードは …", "비밀번호는 …". The value must be six or more
  characters and mix letters with digits or symbols, or be six or more digits.

:mod:`active_memory.screening.secrets` applies both after its own formats, for admission and
redaction alike; :data:`PLACEHOLDER` is the one placeholder test both modules use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FORMS", "PLACEHOLDER", "SecretForm"]

PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{[^}]*\}\}|%[^%]+%|[*x.]+"
    r"|(?:your|my|some|dummy|fake|example|placeholder|redacted|changeme|none|null|true|false)"
    r"[-_a-z]*|\.\.\.|…)$"
)
_VALUE = r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<secret>[^\s\"'`;|&)]{1,256}))"
_REST = r"[^\n|;&`]{0,160}?"  # the rest of one command (a backtick closes a quoted one), bounded
_CLIENTS = r"(?:mysql(?:dump|admin|import|check|show)?|mariadb(?:-dump|-admin)?|mysqlsh)"
_CLI = re.compile(
    # mysql -u root -pS3cret (no space: with one, -p prompts), sshpass -p, 7z -p
    rf"\b(?:{_CLIENTS}|sshpass|7za?)\b{_REST}\s-p(?!\s)" + _VALUE
    + rf"|\bsshpass\s+{_REST}-p\s+" + _VALUE.replace("?P<", "?P<s_")
    # redis-cli -a, sqlcmd -P, ldapsearch -w, zip -P, docker login -p
    + rf"|\b(?:redis-cli{_REST}\s-a|sqlcmd{_REST}\s-P|ldap\w+{_REST}\s-w|(?:un)?zip{_REST}\s-P"
    rf"|(?:docker|podman|helm|buildah|skopeo)\s+(?:registry\s+)?login{_REST}\s-p)\s+"
    + _VALUE.replace("?P<", "?P<o_")
    # --password=X, --db-password X (not --password-stdin, --password-file), -storepass X
    + r"|(?<![\w-])(?:--[\w-]*(?:password|passwd|passphrase)|-(?:src|dest)?(?:store|key)pass)"
    r"(?:=|\s+)" + _VALUE.replace("?P<", "?P<l_")
    # curl -u user:X, curl --user user:X
    + rf"|\bcurl\b{_REST}\s(?:-u\s*|--user[=\s]\s*)['\"]?[^\s:'\"]{{1,64}}:"
    + _VALUE.replace("?P<", "?P<u_")
    # openssl -passin pass:X, smbclient -U user%X, htpasswd -b file user X
    + r"|(?<![\w-])-pass(?:in|out)\s+['\"]?pass:" + _VALUE.replace("?P<", "?P<p_")
    + rf"|\bsmbclient\b{_REST}\s-U\s+['\"]?[^\s%'\"]{{1,64}}%" + _VALUE.replace("?P<", "?P<m_")
    + r"|\bhtpasswd\s+-[a-zA-Z]*b[a-zA-Z]*\s+\S+\s+\S+\s+" + _VALUE.replace("?P<", "?P<h_")
    # PGPASSWORD=X, MYSQL_PWD=X, SSHPASS=X, export DB_ADMIN_PASSWORD='X'
    + r"|(?<![\w$])(?:[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|_PWD|PASSPHRASE)|SSHPASS|REDISCLI_AUTH"
    r"|RSYNC_PASSWORD)=" + _VALUE.replace("?P<", "?P<e_")
)  # fmt: skip

_PROSE_WORDS = (
    r"mot\s+de\s+passe|mdp|passwort|kennwort|contrase[ñn]a|clave\s+de\s+acceso|senha"
    r"|parola\s+d'ordine|wachtwoord|has[łl]o|[şs]ifre|parola|пароль|парол[яю]"
)
_PROSE_VERBS = r"est|lautet|lautete|ist|war|es|era|é|è|jest|это|является"
_QUALIFIER = r"(?:de|del|da|do|für|pour|per|para|dla|для|от|of)"
_PROSE = re.compile(
    # le mot de passe (de la base) est X, das Passwort lautet X, пароль: X
    rf"(?i:(?:{_PROSE_WORDS})(?:\s+{_QUALIFIER}(?:\s+[\w.@-]{{1,40}}){{1,3}})?[^\S\n]{{0,4}}"
    rf"(?:[:=：]|—|(?:{_PROSE_VERBS})(?![\w-])[^\S\n]{{0,4}}:?))[^\S\n]{{0,4}}"
    r"[`'\"«“„「]?(?P<secret>[^\s`'\"»”“」。，、]{6,128})"
    # the verb English shares: het wachtwoord is X, hasło to X, la password è X
    r"|(?i:wachtwoord\s+(?:is|was)|has[łl]o\s+to|password\s+(?:è|era))[^\S\n]{1,4}:?[^\S\n]{0,4}"
    r"[`'\"«“„]?(?P<w_secret>[^\s`'\"»”“]{6,128})"
    # 密码是 X, 密码：X, パスワードは X, 비밀번호는 X: no space needed after the word
    r"|(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호)\s{0,2}(?:[:：=]|是|为|為|は|는|은|가)"
    r"\s{0,4}[「“\"']?(?P<c_secret>[^\s`'\"」”。，、]{6,128})"
)
_TRAILING = ".,;:!?)]}"


def _value(match: re.Match[str]) -> str:
    for name, value in match.groupdict().items():
        if value is not None and name.rsplit("_", 1)[-1] in ("dq", "sq", "secret"):
            return value.rstrip(_TRAILING) if not name.endswith(("dq", "sq")) else value
    return ""


def _redacted(value: str) -> bool:
    # Redaction runs the formats in order: an earlier one may have replaced this value already.
    return value.lower().startswith("[redacted")


def _literal_cli(match: re.Match[str]) -> bool:
    value = _value(match)
    if _redacted(value):
        return False
    if len(value) < 3 or PLACEHOLDER.match(value) or value.startswith(("$", "%", "@", "-")):
        return False  # a variable, a prompt (-p -u), a file (@secret.txt) or the next option
    if any(part in value for part in ("$(", "`", "${", "{{")):
        return False
    if match.group("l_secret") is not None and match.string[match.start("l_secret") - 1] != "=":
        # mysql --password shop prompts and names a database; docker login --password X does
        # not prompt: after a space, only a value mixing letters with digits or symbols counts.
        return any(c.isalpha() for c in value) and not value.isalpha()
    return True


def _literal_prose(match: re.Match[str]) -> bool:
    value = _value(match)
    if _redacted(value):
        return False
    if len(value) < 6 or PLACEHOLDER.match(value) or value.startswith(("$", "%", "{", "<")):
        return False
    if "://" in value or "/" in value:
        return False  # a URL or a path says where the password is kept
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(not c.isalnum() for c in value)
    if value.isdigit():
        return len(value) >= 6
    return letters and (digits or symbols) and not value.replace("_", "").isupper()


@dataclass(frozen=True, slots=True)
class SecretForm:
    """One pattern, the kind it reports and whether a match's value reads as a literal."""

    kind: str
    pattern: re.Pattern[str]
    literal: Callable[[re.Match[str]], bool]
    # Lowercase substrings one of which a text must hold for the pattern to apply: a test in C
    # that spares most cards the scan.
    hints: tuple[str, ...]

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        """The value's span (quotes excluded)."""
        for name, value in match.groupdict().items():
            if value is not None:
                start, end = match.span(name)
                if not name.endswith(("dq", "sq")):
                    end = start + len(value.rstrip(_TRAILING))
                return start, end
        return match.span()


_CLI_HINTS = (
    "mysql", "mariadb", "sshpass", "7z", "redis-cli", "sqlcmd", "ldap", "zip", "login", "pass",
    "curl", "smbclient", "pwd", "auth",
)  # fmt: skip
_PROSE_HINTS = (
    "mot de passe", "mdp", "passwort", "kennwort", "contrase", "clave", "senha", "parola",
    "wachtwoord", "hasło", "haslo", "şifre", "sifre", "парол", "password", "密码", "密碼", "口令",
    "パスワード", "暗証番号", "비밀번호", "암호",
)  # fmt: skip
FORMS: tuple[SecretForm, ...] = (
    SecretForm("cli_password", _CLI, _literal_cli, _CLI_HINTS),
    SecretForm("password_in_prose", _PROSE, _literal_prose, _PROSE_HINTS),
)
