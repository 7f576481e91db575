"""Which sessions may be an account's: the processlist shows the user name and the client host, not the
account (``'user'@'host pattern'``) a session logged in as."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql.accounts.sessions import admits, client_host, may_be_of


def test_client_host_drops_the_port() -> None:
    assert client_host("10.0.0.7:51234") == "10.0.0.7"
    assert client_host("[::1]:5") == "::1"
    assert client_host("localhost") == "localhost"


def test_patterns_admit_like_the_server() -> None:
    assert admits("10.0.0.%", "10.0.0.7")
    assert not admits("10.0.0.%", "10.0.1.7")
    assert admits("app_", "APP1")
    assert admits("10.0.0.0/255.255.255.0", "192.168.0.1")  # a netmask: over-approximated


@pytest.mark.parametrize(
    ("hosts", "client", "others", "counted"),
    [
        (["%"], "10.0.0.7", [], True),
        # another tenant's account of the same user name, on another host: its sessions are its own
        (["10.0.0.%"], "192.168.1.2", ["192.168.%"], False),
        (["10.0.0.%"], "192.168.1.2", [], False),  # an address the account does not admit
        # a literal host beats any pattern: that session is the other account's
        (["%"], "10.0.0.7", ["10.0.0.7"], False),
        (["%"], "localhost", ["localhost"], False),
        (["10.0.0.%"], "10.0.0.7", ["10.0.0.7"], False),
        # both with wildcards: which one the server picked is not known here, so counted
        (["%"], "10.0.0.7", ["10.0.0.%"], True),
        # a literal host of ours is never beaten by another literal: counted
        (["10.0.0.7"], "10.0.0.7", ["%"], True),
        # a name may have matched by its address (not shown): counted
        (["10.0.0.%"], "app.example", ["%"], True),
        # localhost is the socket or a loopback address
        (["127.0.0.1"], "localhost", ["%"], True),
        (["10.%"], "localhost", ["%"], False),
        # several hosts of one resource: any of them
        (["10.0.0.%", "192.168.%"], "192.168.1.2", ["%"], True),
        (["::1"], "10.0.0.7", [], True),  # an IPv6 host pattern admits every client (over-approximated)
    ],
)
def test_may_be_of(hosts: list[str], client: str, others: list[str], counted: bool) -> None:
    assert may_be_of(hosts, client, others) is counted
