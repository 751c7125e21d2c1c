"""Passwords handed to a command or its environment, and named in prose in other languages;
prompts, variables, placeholders and ports are not passwords."""

from __future__ import annotations

import pytest

from active_memory.evidence.redact import redact_text
from active_memory.screening.secrets import find_secret

# (text, kind, the value that must not survive redaction)
SECRETS = [
    ("mysql -u root -pFake2024pass shop", "cli_password", "Fake2024pass"),
    ("mysql -proot", "cli_password", "root"),
    ("mysqldump --password=Fake-Dump-1 shop", "password_assignment", "Fake-Dump-1"),
    ("mysqldump --password=pwdump shop", "cli_password", "pwdump"),
    ("mysql -h db -u app --password Fake-App-22", "password_in_prose", "Fake-App-22"),
    ("helm registry login --password Reg0000pw ghcr.io", "password_in_prose", "Reg0000pw"),
    ("sshpass -p fakepass123 ssh ci@build", "cli_password", "fakepass123"),
    ("redis-cli -a Fake-Redis-7 ping", "cli_password", "Fake-Redis-7"),
    ("sqlcmd -S db -U sa -P Fake-Sql-2024", "cli_password", "Fake-Sql-2024"),
    ("docker login -p Fake-Reg-2024 registry.example.invalid", "cli_password", "Fake-Reg-2024"),
    ("curl -u admin:FakeAdmin9 https://ci.example.invalid", "cli_password", "FakeAdmin9"),
    ("openssl pkcs12 -in a.p12 -passin pass:p12local", "password_in_prose", "p12local"),
    ("openssl pkcs12 -in a.p12 -passin pass:localpw", "cli_password", "localpw"),
    ("keytool -list -storepass fakestore1", "cli_password", "fakestore1"),
    ("ldapsearch -x -D cn=admin -w FakeLdap1", "cli_password", "FakeLdap1"),
    ("zip -P fakezip123 out.zip a", "cli_password", "fakezip123"),
    ("7z a -pFake7zip x.7z a", "cli_password", "Fake7zip"),
    ("smbclient //nas/share -U alice%FakeSmb99", "cli_password", "FakeSmb99"),
    ("htpasswd -b .htpasswd admin FakeHt99", "cli_password", "FakeHt99"),
    ("PGPASSWORD=pglocal psql -h db", "cli_password", "pglocal"),
    ("export MYSQL_PWD=devpwd", "cli_password", "devpwd"),
    ("SSHPASS=sshdev sshpass -e ssh host", "cli_password", "sshdev"),
    ("le mot de passe est Fake-Mdp-42", "password_in_prose", "Fake-Mdp-42"),
    ("le mot de passe de la base est Fake-Db-77", "password_in_prose", "Fake-Db-77"),
    ("das Passwort lautet Geheim2024!", "password_in_prose", "Geheim2024"),
    ("das Passwort für den Server lautet Fake-Srv-3", "password_in_prose", "Fake-Srv-3"),
    ("la contraseña es Fake-Clave-7", "password_in_prose", "Fake-Clave-7"),
    ("a senha é Fake-Senha-8", "password_in_prose", "Fake-Senha-8"),
    ("la password è Fake-Pw-2024", "password_in_prose", "Fake-Pw-2024"),
    ("het wachtwoord is Fake-Ww-2024", "password_in_prose", "Fake-Ww-2024"),
    ("hasło to Fake-Haslo-1", "password_in_prose", "Fake-Haslo-1"),
    ("şifre: Fake-Sifre-5", "password_in_prose", "Fake-Sifre-5"),
    ("пароль: Fake-Parol-9", "password_in_prose", "Fake-Parol-9"),
    ("пароль для сервера: FakeServ11", "password_in_prose", "FakeServ11"),
    ("密码是 Fake2024mima", "password_in_prose", "Fake2024mima"),
    ("密码：fake2024x", "password_in_prose", "fake2024x"),
    ("パスワードは Fake-2024-pw", "password_in_prose", "Fake-2024-pw"),
    ("비밀번호는 Fake2024kr", "password_in_prose", "Fake2024kr"),
    ("redis://:FakeRedisPw9@cache.example.invalid:6379/0", "url_credentials", "FakeRedisPw9"),
]
NOT_SECRETS = [
    "mysql -u root -p shop",
    "mysql -p -h db",
    "mysql -P 3306 -h db",
    "mysql --password shop",
    "mysql --password=$DB_PASS",
    "mysql -p$MYSQL_PASSWORD",
    "docker login --password-stdin",
    "set --password-file /run/secrets/db",
    'curl -u "$USER:$TOKEN" https://x.example.invalid',
    "curl -u admin: https://x.example.invalid",
    "curl -u user:${TOKEN} https://x.example.invalid",
    "PGPASSWORD=$PGPASS psql",
    'export PGPASSWORD="$(vault kv get -field=pw db)"',
    "read MYSQL_PWD from the vault",
    "sshpass -e ssh host",
    'redis-cli -a "$REDIS_PASSWORD" ping',
    "keytool -storepass:env STOREPASS",
    "ssh -p 2222 host",
    "scp -P 2222 a host:",
    "docker run -p 8080:80 app",
    "Pass the password to pgbouncer-auth",
    "le mot de passe est stocké dans le coffre",
    "das Passwort ist geheim",
    "la contraseña es obligatoria",
    "пароль хранится в Vault",
    "密码是必填项",
    "wachtwoord is verplicht",
    "mot de passe: <votre-mdp>",
    "passwort: ${DB_PASS}",
]


@pytest.mark.parametrize(("text", "kind", "value"), SECRETS)
def test_passwords_in_commands_and_prose_are_found_and_redacted(
    text: str, kind: str, value: str
) -> None:
    assert find_secret(text) == kind
    assert value not in redact_text(f"before {text} after")


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_prompts_variables_and_ports_are_not_passwords(text: str) -> None:
    assert find_secret(text) is None
