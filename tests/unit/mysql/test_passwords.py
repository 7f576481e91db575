"""The password lengths each flavour and plugin take, checked before any statement."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql.accounts.passwords import PLAINTEXT_LIMIT, check_length, max_password_bytes
from dbuser_operator.mysql.errors import InvalidPasswordError, PasswordLengthError, classify


@pytest.mark.parametrize("plugin", [None, "caching_sha2_password", "sha256_password"])
def test_mysql_sha2_plugins_take_256_bytes(plugin: str | None) -> None:
    assert max_password_bytes("mysql", plugin) == PLAINTEXT_LIMIT == 256
    check_length("a" * 256, "mysql", plugin)
    check_length("é" * 128, "mysql", plugin)  # 256 bytes of UTF-8
    with pytest.raises(PasswordLengthError) as refused:
        check_length("é" * 129, "mysql", plugin)  # 129 characters, 258 bytes
    assert isinstance(refused.value, InvalidPasswordError)
    assert "256 bytes" in str(refused.value)
    assert "é" not in str(refused.value)
    assert classify(refused.value).reason == "PasswordTooLong"


@pytest.mark.parametrize(
    ("flavour", "plugin"),
    [("mysql", "mysql_native_password"), ("mariadb", None), ("mariadb", "ed25519")],
)
def test_other_plugins_take_what_a_secret_holds(flavour: str, plugin: str | None) -> None:
    assert max_password_bytes(flavour, plugin) is None  # type: ignore[arg-type]
    check_length("a" * (1 << 20), flavour, plugin)  # type: ignore[arg-type]
