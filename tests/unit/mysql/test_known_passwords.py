"""The passwords this process set, as keyed digests: answers only for the marker it set them with."""

from __future__ import annotations

from dbuser_operator.mysql.accounts.known_passwords import KnownPasswords
from dbuser_operator.mysql.accounts.password_hashes import fingerprint, native_hash
from dbuser_operator.mysql.accounts.password_match import fingerprint_matches


def test_a_password_set_with_a_marker_is_known_while_the_account_shows_that_marker() -> None:
    known = KnownPasswords()
    known.remember("app", "%", "uid/1", "first")
    assert known.holds("app", "%", "uid/1", "first") is True
    assert known.holds("app", "%", "uid/1", "second") is False
    assert known.holds("app", "%", "uid/2", "first") is None  # another credential: set by someone else
    assert known.holds("app", "%", None, "first") is None  # no marker on the account
    assert known.holds("app", "other", "uid/1", "first") is None
    assert known.holds("APP", "%", "uid/1", "first") is None  # user names are case-sensitive


def test_hosts_are_compared_without_regard_to_case_and_forget_drops_the_entry() -> None:
    known = KnownPasswords()
    known.remember("app", "Example.COM", "m", "pw")
    assert known.holds("app", "example.com", "m", "pw") is True
    known.forget("app", "EXAMPLE.com")
    assert known.holds("app", "example.com", "m", "pw") is None


def test_a_newer_password_replaces_the_entry_and_the_oldest_accounts_go_first() -> None:
    known = KnownPasswords(limit=2)
    known.remember("a", "%", "m1", "one")
    known.remember("a", "%", "m2", "two")
    assert known.holds("a", "%", "m1", "one") is None
    assert known.holds("a", "%", "m2", "two") is True
    known.remember("b", "%", "m", "pw")
    known.remember("c", "%", "m", "pw")
    assert len(known) == 2
    assert known.holds("a", "%", "m2", "two") is None  # the least recently set account went
    assert known.holds("c", "%", "m", "pw") is True


def test_the_digest_is_keyed_per_process() -> None:
    first, second = KnownPasswords(), KnownPasswords()
    first.remember("a", "%", "m", "pw")
    second.remember("a", "%", "m", "pw")
    assert first._entries[("a", "%")] != second._entries[("a", "%")]
    assert "pw" not in repr(first._entries)


def test_an_unsalted_hash_is_judged_on_the_fingerprint_a_look_read() -> None:
    current = fingerprint(native_hash("secret"))
    assert fingerprint_matches("mysql_native_password", current, "secret") is True
    assert fingerprint_matches("mysql_native_password", current.upper(), "secret") is True
    assert fingerprint_matches("mysql_native_password", current, "other") is False
    assert fingerprint_matches("caching_sha2_password", current, "secret") is None  # salted: unknown
    assert fingerprint_matches("mysql_native_password", None, "secret") is None
    assert fingerprint_matches(None, current, "secret") is None
