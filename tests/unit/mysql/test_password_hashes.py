"""The servers' password hashes on the client, checked against values the real servers stored.

The MySQL strings come from MySQL 9.7.4 (``SELECT HEX(authentication_string)`` after ``CREATE USER …
IDENTIFIED BY``; its default is 10,000 rounds, ``$A$00A$``); the MariaDB ones from MariaDB 11.8.9 and
10.11.19 (``SELECT PASSWORD(…)``, and the ``authentication_string`` of ``IDENTIFIED VIA ed25519 USING
PASSWORD(…)``: these servers have no ``ed25519_password()`` function).
"""

from __future__ import annotations

import pytest

from dbuser_operator.mysql.accounts.password_hashes import (
    caching_sha2_matches,
    caching_sha2_string,
    ed25519_hash,
    fingerprint,
    matches,
    native_hash,
    sha256_crypt,
    stored_hash,
)

LONG = "pässwörd-ünïcode-that-is-longer-than-thirty-two-bytes-for-sure"

# MySQL 9.7.4, caching_sha2_password: the salts hold control characters (hence hex).
MYSQL_97 = {
    "secret-pw": "244124303041240E4055272555513D734D5F552C5E6D53092B3F2A45344B7378754233567966434E52587856"
    "796432377351765650536F5A31494B706864374E7362734C4A34",
    "abc2": "24412430304124220126785C051E440340693D3E1B6F643632662550476A6559376246354853345357376747493561"
    "737A7467714E535A45696335484C6F5848354866555339",
    LONG: "24412430304124445A69054F0D6C72352772777F1E6C053E740B036434307441497778344E437979534D496D5337"
    "72412F69335570462F785843396C55304173763256366431",
    "x": "24412430304124416A10472E016730141437424A62544D1A2338797A354441313049426C39555742786C67497A552E"
    "5444457A787576456D45366458365256466A7653694441",
}


@pytest.mark.parametrize(("password", "hex_string"), MYSQL_97.items())
def test_caching_sha2_strings_of_mysql_97_match_their_password_only(password: str, hex_string: str) -> None:
    stored = bytes.fromhex(hex_string)
    assert caching_sha2_matches(stored, password)
    assert caching_sha2_matches(stored.decode(), password)  # as the driver returns it: text
    assert not caching_sha2_matches(stored, password + "x")
    assert not caching_sha2_matches(stored, password[:-1] or "y")
    assert matches("caching_sha2_password", stored.decode(), password) is True
    assert matches("caching_sha2_password", stored.decode(), "other") is False


@pytest.mark.parametrize(
    "stored",
    [b"", b"*" + b"0" * 40, b"$A$005$short", b"$A$XYZ$" + b"s" * 20 + b"d" * 43, b"$A$000$" + b"s" * 63],
)
def test_other_strings_are_no_caching_sha2_password(stored: bytes) -> None:
    assert not caching_sha2_matches(stored, "pw")


def test_sha256_crypt_is_drepper_s() -> None:
    """The reference's vectors (and glibc's crypt): the default 5000 rounds and 10000."""
    assert sha256_crypt(b"Hello world!", b"saltstring", 5000) == "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
    assert (
        sha256_crypt(b"Hello world!", b"saltstringsaltst", 10000)
        == "3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"
    )


@pytest.mark.parametrize(
    ("password", "expected"),
    [
        ("secret-pw", "*B87675491D86B74664F2EA1D3A7060E82A810802"),
        ("abc", "*0D3CED9BEC10A777AEC23CCC353A8C08A633045E"),
        ("def", "*EFA28F5E94885AA962E1AFC1912CE376EE374F65"),
        (LONG, "*4E3C260F97A89B1C9A4E9DE9334037E0E55966F5"),
        ("", ""),
    ],
)
def test_native_hash_is_mariadb_s_password_function(password: str, expected: str) -> None:
    assert native_hash(password) == expected
    assert stored_hash("mysql_native_password", password) == expected


@pytest.mark.parametrize(
    ("password", "expected"),
    [
        ("secret-pw", "jtGWwuAhZhV97mRP5olH/1MUMl1EEkEd9yX3Hm6CVFA"),
        ("abc", "lEiAPNNMP1kq0dRsguIBKo/em5EPb9Y0272TblVhRUw"),
        (LONG, "JC8tUcb+EY0ttn6QEJY/lKQUyljdm3/0HxxtxKotmhI"),
    ],
)
def test_ed25519_hash_is_what_mariadb_stores(password: str, expected: str) -> None:
    assert ed25519_hash(password) == expected
    assert stored_hash("ed25519", password) == expected
    assert matches("ed25519", expected, password) is True
    assert matches("ed25519", expected, password + "x") is False


def test_salted_or_unknown_plugins_have_no_hash_known_beforehand() -> None:
    assert stored_hash("caching_sha2_password", "pw") is None
    assert stored_hash("sha256_password", "pw") is None
    assert matches("sha256_password", "$5$anything", "pw") is None


def test_the_fingerprint_is_the_server_s_sha2() -> None:
    """``SELECT SHA2(…, 256)``: MariaDB 11.8 of a native hash, MySQL 9.7 of ``authentication_string``."""
    native = "*B87675491D86B74664F2EA1D3A7060E82A810802"
    assert fingerprint(native) == "256c146ec3dca28eba6b3200a74cf2e75dc67d3d74d596105b9f3b5a614a866d"
    stored = bytes.fromhex(MYSQL_97["secret-pw"])
    expected = "4b7de2e1f954939ad580e28fdde4cc199d08a05422b8d1780078fcd86283b37b"
    assert fingerprint(stored) == fingerprint(stored.decode()) == expected


@pytest.mark.parametrize("rounds", [5000, 10000])
def test_a_caching_sha2_string_made_on_the_client_is_its_password_s_alone(rounds: int) -> None:
    """What the operator sends ``AS`` (mysql.accounts.hashed_password): MySQL's format, a fresh salt each
    time, of crypt's alphabet (never ``$``), checked as a server's own string is."""
    first, second = caching_sha2_string("pw-1", rounds), caching_sha2_string("pw-1", rounds)
    assert first != second  # salted
    for string in (first, second):
        assert len(string) == 70
        assert string.startswith(f"$A${rounds // 1000:03X}$")
        assert "$" not in string[7:]
        assert caching_sha2_matches(string, "pw-1") is True
        assert caching_sha2_matches(string, "pw-2") is False


@pytest.mark.parametrize("rounds", [0, 4500, 0x1000 * 1000])
def test_rounds_a_server_cannot_read_are_refused(rounds: int) -> None:
    with pytest.raises(ValueError, match="rounds"):
        caching_sha2_string("pw", rounds)
