"""Passwords: checked before they travel, always as query parameters and as :class:`SecretStr`.

Every statement that sets a password (:mod:`.accounts`, :mod:`.authentication`, :mod:`.dual_password`)
checks it here first, so that an unusable one is refused before anything is sent.

How long a password may be depends on the flavour and the plugin, and a server does not say it plainly:
MySQL refuses a longer one with error 1396, the code of an account that exists (measured on MySQL 9.7.4:
256 bytes of UTF-8 accepted, 257 refused, under ``caching_sha2_password`` and ``sha256_password``, whose
source caps the plaintext at ``MAX_PLAINTEXT_LENGTH``). MariaDB 11.8 took 1 MiB (a Secret's limit) under
``mysql_native_password`` and ``ed25519``. :func:`check_length` refuses a longer password before any
statement.
"""

from __future__ import annotations

from typing import Final

from pydantic import SecretStr

from dbuser_operator.mysql.errors import InvalidPasswordError, PasswordLengthError
from dbuser_operator.mysql.session.server import Flavour

PLAINTEXT_LIMIT: Final = 256
"""The most bytes MySQL's ``caching_sha2_password`` and ``sha256_password`` take."""

_LIMITED: Final = frozenset({"caching_sha2_password", "sha256_password"})


def validate_password(password: str | SecretStr) -> SecretStr:
    """The password as a :class:`SecretStr`: a non-empty string without NUL (the message never shows it)."""
    value = password.get_secret_value() if isinstance(password, SecretStr) else password
    if not isinstance(value, str):
        raise InvalidPasswordError(f"a password must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidPasswordError("a password must not be empty")
    if "\0" in value:
        raise InvalidPasswordError("a password must not contain NUL characters")
    return SecretStr(value)


def max_password_bytes(flavour: Flavour, plugin: str | None) -> int | None:
    """The most bytes (UTF-8) of a password the ``plugin`` takes on a server of ``flavour``; None: no limit
    below a Secret's size. ``plugin`` None is the server's default: on MySQL, ``caching_sha2_password``
    (the default since 8.0, the only password plugin since 9.0; a MySQL 8 server configured to default
    to ``mysql_native_password`` is held to it too)."""
    if flavour == "mysql" and (plugin is None or plugin in _LIMITED):
        return PLAINTEXT_LIMIT
    return None


def check_length(password: str | SecretStr, flavour: Flavour, plugin: str | None) -> None:
    """Raise :class:`~.errors.PasswordLengthError` when the password is longer than the plugin takes."""
    limit = max_password_bytes(flavour, plugin)
    value = password.get_secret_value() if isinstance(password, SecretStr) else password
    if limit is not None and len(value.encode("utf-8")) > limit:
        used = plugin or "caching_sha2_password (the default)"
        raise PasswordLengthError(f"a password for {used} on MySQL takes at most {limit} bytes (UTF-8)")
