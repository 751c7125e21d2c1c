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
  "пароль: …", "mật khẩu là …", "kata sandi adalah …", "كلمة المرور هي …", "密码是 …",
  "パスワードは …", "비밀번호는 …", with what it is for between word and verb ("le mot de
  passe de la base de staging est …", "das Passwort für den Server lautet …"). The value must be
  six or more characters and mix letters with digits or symbols, or be six or more digits.

:mod:`active_memory.screening.secrets` applies both after its own formats, for admission and
redaction alike; :data:`PLACEHOLDER` is the one placeholder test both modules use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from active_memory.screening.compiled import compiled

__all__ = ["FORMS", "PLACEHOLDER", "SecretForm"]

PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{[^}]*\}\}|%[^%]+%|[*x.]+"
    r"|(?:your|my|some|dummy|fake|example|placeholder|redacted|changeme|none|null|true|false)"
    r"[-_a-z]*|\.\.\.|…)$"
)
_VALUE = r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<secret>[^\s\"'`;|&)]{1,256}))"
_REST = r"[^\n|;&`]{0,160}?"  # the rest of one command (a backtick closes a quoted one), bounded
_CLIENTS = r"(?:mysql(?:dump|admin|import|check|show)?|mariadb(?:-dump|-admin)?|mysqlsh)"
_PROSE_WORDS = (
    r"mot\s+de\s+passe|mdp|passwort|kennwort|contrase[ñn]a|clave\s+de\s+acceso|senha"
    r"|parola\s+d'ordine|wachtwoord|has[łl]o|[şs]ifre|parola|пароль|парол[яю]"
)
_PROSE_VERBS = r"est|lautet|lautete|ist|war|es|era|é|è|jest|это|является"
_QUALIFIER = (
    r"(?:de|del|des|du|da|do|di|della|dello|für|fur|vom|zum|zur|pour|per|para|dla|do|для|от|of"
    r"|van|voor|untuk|dari|của|cua|cho)"
)
# What the password is for, between the word and its verb: "de la base de staging", "für den
# Testserver", "van de testomgeving", "của máy chủ thử", up to six words after the qualifier.
_FOR = rf"(?:\s+{_QUALIFIER}(?:\s+[\w.@'’-]{{1,40}}){{1,6}}?)?"
_TRAILING = ".,;:!?)]}"


def _value(match: re.Match[str]) -> str:
    for name in ("dq", "sq"):
        if name in match.re.groupindex and match.group(name) is not None:
            return match.group(name)
    return (match.group("secret") or "").rstrip(_TRAILING)


def _redacted(value: str) -> bool:
    # Redaction runs the formats in order: an earlier one may have replaced this value already.
    return value.lower().startswith("[redacted")


def _literal_cli(match: re.Match[str]) -> bool:
    value = _value(match)
    if _redacted(value):
        return False
    if len(value) < 3 or PLACEHOLDER.match(value) or value.startswith(("$", "%", "@", "-")):
        return False  # a variable, a prompt (-p -u), a file (@secret.txt) or the next option
    return not any(part in value for part in ("$(", "`", "${", "{{"))


def _literal_option(match: re.Match[str]) -> bool:
    if not _literal_cli(match):
        return False
    if match.group("secret") is None or match.string[match.start("secret") - 1] == "=":
        return True
    # mysql --password shop prompts and names a database; docker login --password X does not
    # prompt: after a space, only a bare value mixing letters with digits or symbols counts.
    value = _value(match)
    return any(c.isalpha() for c in value) and not value.isalpha()


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
    # The pattern's source, compiled the first time a text holds one of the hints: most
    # processes never need most forms (:mod:`active_memory.screening.compiled`).
    source: str
    literal: Callable[[re.Match[str]], bool]
    # Lowercase substrings one of which a text must hold for the pattern to apply: a test in C
    # that spares most cards the scan (one pattern per form, so each scans only when it may).
    hints: tuple[str, ...]

    @property
    def pattern(self) -> re.Pattern[str]:
        return compiled(self.source)

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        """The value's span (quotes excluded, trailing punctuation of a bare value too)."""
        for name in ("dq", "sq", "secret"):
            if name in match.re.groupindex and match.group(name) is not None:
                start, end = match.span(name)
                if name == "secret":
                    end = start + len(match.group(name).rstrip(_TRAILING))
                return start, end
        return match.span()


def _cli(
    hints: tuple[str, ...],
    before: str,
    literal: Callable[[re.Match[str]], bool] = _literal_cli,
) -> SecretForm:
    return SecretForm("cli_password", before + _VALUE, literal, hints)


def _prose(hints: tuple[str, ...], pattern: str) -> SecretForm:
    return SecretForm("password_in_prose", pattern, _literal_prose, hints)


FORMS: tuple[SecretForm, ...] = (
    # mysql -u root -pS3cret (no space: with one, -p prompts), sshpass -pX, 7z -pX
    _cli(("mysql", "mariadb", "sshpass", "7z"),
         rf"\b(?:{_CLIENTS}|sshpass|7za?)\b{_REST}\s-p(?!\s)"),
    _cli(("sshpass",), rf"\bsshpass\s+{_REST}-p\s+"),
    # redis-cli -a, sqlcmd -P, ldapsearch -w, zip -P, docker login -p
    _cli(("redis-cli", "sqlcmd", "ldap", "zip", "login"),
         rf"\b(?:redis-cli{_REST}\s-a|sqlcmd{_REST}\s-P|ldap\w+{_REST}\s-w|(?:un)?zip{_REST}\s-P"
         rf"|(?:docker|podman|helm|buildah|skopeo)\s+(?:registry\s+)?login{_REST}\s-p)\s+"),
    # --password=X, --db-password X (not --password-stdin, --password-file), -storepass X
    _cli(("pass",),
         r"(?<![\w-])(?:--[\w-]*(?:password|passwd|passphrase)|-(?:src|dest)?(?:store|key)pass)"
         r"(?:=|\s+)", _literal_option),
    # curl -u user:X, curl --user user:X
    _cli(("curl",), rf"\bcurl\b{_REST}\s(?:-u\s*|--user[=\s]\s*)['\"]?[^\s:'\"]{{1,64}}:"),
    # openssl -passin pass:X, smbclient -U user%X, htpasswd -b file user X
    _cli(("-pass",), r"(?<![\w-])-pass(?:in|out)\s+['\"]?pass:"),
    _cli(("smbclient",), rf"\bsmbclient\b{_REST}\s-U\s+['\"]?[^\s%'\"]{{1,64}}%"),
    _cli(("htpasswd",), r"\bhtpasswd\s+-[a-zA-Z]*b[a-zA-Z]*\s+\S+\s+\S+\s+"),
    # PGPASSWORD=X, MYSQL_PWD=X, SSHPASS=X, export DB_ADMIN_PASSWORD='X'
    _cli(("pass", "_pwd", "rediscli_auth"),
         r"(?<![\w$])(?:[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|_PWD|PASSPHRASE)|SSHPASS|REDISCLI_AUTH"
         r"|RSYNC_PASSWORD)="),
    # le mot de passe (de la base de staging) est X, das Passwort (für den Server) lautet X
    # Hints hold no space (\s+ also matches a line break) and name the narrow ᲂ IGNORECASE
    # matches with о (required_literals.case_fold maps only what matches ASCII letters).
    _prose(("passe", "mdp", "passwort", "kennwort", "contrase", "clave", "senha", "parola",
            "wachtwoord", "hasło", "haslo", "şifre", "sifre", "парол", "пар\u1c82л"),
           rf"(?i:(?:{_PROSE_WORDS}){_FOR}[^\S\n]{{0,4}}"
           rf"(?:[:=：]|—|(?:{_PROSE_VERBS})(?![\w-])[^\S\n]{{0,4}}:?))[^\S\n]{{0,4}}"
           r"[`'\"«“„「]?(?P<secret>[^\s`'\"»”“」。，、]{6,128})"),
    # the verb English shares: het wachtwoord (van de server) is X, hasło (do bazy) to X, la
    # password (del database) è X
    _prose(("wachtwoord", "hasło", "haslo", "password"),
           rf"(?i:(?:wachtwoord{_FOR}\s+(?:is|was)|has[łl]o{_FOR}\s+to|password{_FOR}\s+(?:è|era)))"
           r"[^\S\n]{1,4}:?[^\S\n]{0,4}[`'\"«“„]?(?P<secret>[^\s`'\"»”“]{6,128})"),
    # mật khẩu (của máy chủ) là X, kata sandi (untuk server) adalah X, كلمة المرور (…) هي X
    _prose(("khẩu", "khau", "sandi", "كلمة", "كلمه"),
           rf"(?i:(?:mật\s+khẩu|mat\s+khau|kata\s+sandi|sandi|كلم[ةه]\s+(?:ال)?(?:مرور|سر))"
           rf"(?:{_FOR}|(?:\s+[^\W\d]{{1,20}}){{1,4}}?)[^\S\n]{{0,4}}"
           r"(?:[:=：]|(?:là|la|adalah|ialah|yaitu|هي|هى)(?![\w-])[^\S\n]{0,4}:?))[^\S\n]{0,4}"
           r"[`'\"«“„]?(?P<secret>[^\s`'\"»”“]{6,128})"),
    # 密码是 X, 密码：X, パスワードは X, 비밀번호는 X: no space needed after the word
    _prose(("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호", "암호"),
           r"(?:密码|密碼|口令|パスワード|暗証番号|비밀번호|암호)\s{0,2}(?:[:：=]|是|为|為|は|는|은|가)"
           r"\s{0,4}[「“\"']?(?P<secret>[^\s`'\"」”。，、]{6,128})"),
)  # fmt: skip
