"""MariaDB's authentication chains read from ``mysql.global_priv.Priv``, and which password is current."""

from __future__ import annotations

import json

import pytest

from dbuser_operator.mysql import ServerInfo
from dbuser_operator.mysql.accounts import mariadb_dual_auth
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.mariadb_dual_auth import DualAuthState, Entry, entries_of
from dbuser_operator.mysql.accounts.password_hashes import ed25519_hash, native_hash

NATIVE = Method("mysql_native_password", "mariadb")
ED25519 = Method("ed25519", "mariadb")


def test_one_authentication() -> None:
    priv = json.dumps({"access": 0, "plugin": "mysql_native_password", "authentication_string": "*AB"})
    assert entries_of(priv) == (Entry("mysql_native_password", "*AB"),)


@pytest.mark.parametrize(
    ("priv", "entries"),
    [
        # as MariaDB 10.11 and 11.8 store `VIA mysql_native_password USING 'new' OR ... USING 'old'`:
        # the first native entry at the top level
        (
            {
                "plugin": "mysql_native_password",
                "authentication_string": "*NEW",
                "auth_or": [{}, {"plugin": "mysql_native_password", "authentication_string": "*OLD"}],
            },
            (Entry("mysql_native_password", "*NEW"), Entry("mysql_native_password", "*OLD")),
        ),
        # and `VIA ed25519 USING 'a' OR ed25519 USING 'b'`: the last one at the top level
        (
            {
                "plugin": "ed25519",
                "authentication_string": "b",
                "auth_or": [{"plugin": "ed25519", "authentication_string": "a"}, {}],
            },
            (Entry("ed25519", "a"), Entry("ed25519", "b")),
        ),
        # one entry left by an ALTER USER after a chain
        (
            {"plugin": "mysql_native_password", "authentication_string": "*NEW", "auth_or": [{}]},
            (Entry("mysql_native_password", "*NEW"),),
        ),
    ],
)
def test_a_chain_lists_its_entries_in_order_the_empty_one_being_the_top_level_one(
    priv: dict[str, object], entries: tuple[Entry, ...]
) -> None:
    assert entries_of(json.dumps(priv)) == entries


def test_nothing_readable_is_no_entry() -> None:
    assert entries_of("[]") == ()
    assert entries_of(None) == (Entry("", ""),)


@pytest.mark.parametrize(("method", "hashed"), [(NATIVE, native_hash), (ED25519, ed25519_hash)])
def test_the_current_entry_holds_the_password_whose_hash_it_stores(method: Method, hashed: object) -> None:
    assert callable(hashed)
    state = DualAuthState((Entry(method.plugin, hashed("new")), Entry(method.plugin, hashed("old"))))
    assert state.retained
    assert state.holds(method, "new")
    assert not state.holds(method, "old")  # an older entry is not the current password
    other = NATIVE if method is ED25519 else ED25519
    assert not state.holds(other, "new")  # the same password under another plugin is another credential


def test_support_follows_flavour_and_version() -> None:
    assert mariadb_dual_auth.supports_dual_auth(ServerInfo("mariadb", (10, 11, 6)))
    assert mariadb_dual_auth.supports_dual_auth(ServerInfo("mariadb", (11, 8, 3)))
    assert not mariadb_dual_auth.supports_dual_auth(ServerInfo("mariadb", (10, 6, 20)))
    assert not mariadb_dual_auth.supports_dual_auth(ServerInfo("mysql", (9, 7, 0)))
