"""Passwords: checked before they travel, always as query parameters and as :class:`SecretStr`.

Every statement that sets a password (:mod:`.accounts`, :mod:`.authentication`, :mod:`.dual_password`)
checks it here first, so that an unusable one is refused before anything is sent.
"""

from __future__ import annotations

from pydantic import SecretStr

from dbuser_operator.mysql.errors import InvalidPasswordError


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
