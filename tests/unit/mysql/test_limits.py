"""Account options without a server: ranges, reading mysql.user rows, the ALTER USER statement."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql import InvalidAccountError, InvalidOptionsError
from dbuser_operator.mysql.accounts import limits, lock_policy, observe
from dbuser_operator.mysql.accounts.limits import (
    COLUMNS,
    LIMIT_COLUMNS,
    LIMIT_MAX,
    USER_CONNECTIONS_MAX,
    Limits,
    alter_statement,
    column_list,
)
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.bookkeeping import inventory


def test_defaults_mean_no_limits_and_no_tls() -> None:
    options = Limits()
    assert (options.max_user_connections, options.max_queries_per_hour) == (0, 0)
    assert (options.max_updates_per_hour, options.max_connections_per_hour) == (0, 0)
    assert options.require_tls is False
    assert options.tls_identity == TLSIdentity()
    assert not options.tls_identity


def test_largest_values() -> None:
    options = Limits(USER_CONNECTIONS_MAX, LIMIT_MAX, LIMIT_MAX, LIMIT_MAX, True)
    assert options.max_user_connections == 2147483647
    assert options.max_queries_per_hour == 4294967295


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_user_connections", -1),
        ("max_user_connections", USER_CONNECTIONS_MAX + 1),  # MariaDB: a syntax error
        ("max_queries_per_hour", LIMIT_MAX + 1),  # MariaDB silently stores 0
        ("max_updates_per_hour", -5),
        ("max_updates_per_hour", LIMIT_MAX + 1),
        ("max_connections_per_hour", LIMIT_MAX + 1),
        ("max_connections_per_hour", 1.5),
        ("max_connections_per_hour", "10"),
        ("max_queries_per_hour", True),
        ("max_queries_per_hour", "1 MAX_USER_CONNECTIONS 5"),
        ("require_tls", 1),
        ("require_tls", "false"),
        ("tls_identity", "CIPHER 'x'"),
    ],
)
def test_out_of_range_or_of_the_wrong_type(field: str, value: object) -> None:
    with pytest.raises(InvalidOptionsError, match=field) as refused:
        Limits(**{field: value})  # type: ignore[arg-type]
    assert refused.value.reason == "InvalidOptions"


def test_a_tls_identity_implies_tls() -> None:
    with pytest.raises(InvalidOptionsError, match="implies require_tls"):
        Limits(tls_identity=TLSIdentity(x509=True))


@pytest.mark.parametrize(
    ("columns", "require_tls", "identity"),
    [
        (("", b"", b"", b""), False, TLSIdentity()),
        ((None, None, None, None), False, TLSIdentity()),
        (("ANY", b"", b"", b""), True, TLSIdentity()),
        (("X509", "", "", ""), True, TLSIdentity(x509=True)),
        (("SPECIFIED", b"/CN=ca", b"/CN=app", b""), True, TLSIdentity(issuer="/CN=ca", subject="/CN=app")),
        (("SPECIFIED", "", "", "TLS_AES_256_GCM_SHA384"), True, TLSIdentity(cipher="TLS_AES_256_GCM_SHA384")),
    ],
)
def test_from_mysql_user_columns(
    columns: tuple[object, ...], require_tls: bool, identity: TLSIdentity
) -> None:
    """Blobs on MySQL (bytes), text on MariaDB (a view over JSON): the same options."""
    options = Limits.from_columns(dict(zip(COLUMNS, (1, "2", 3, 4, *columns), strict=True)))
    assert options == Limits(1, 2, 3, 4, require_tls, identity)
    if identity:
        assert options != Limits(1, 2, 3, 4, True)  # a requirement set by hand is drift


def test_from_the_limit_columns_alone() -> None:
    """Without issuer, subject and cipher the TLS identity comes from ssl_type alone."""
    row = dict(zip(LIMIT_COLUMNS, (1, "2", 3, 4, "X509"), strict=True))
    assert Limits.from_row(row) == Limits(1, 2, 3, 4, True, TLSIdentity(x509=True))
    row = dict(zip(LIMIT_COLUMNS, (0, 0, 0, 0, "SPECIFIED"), strict=True))
    assert Limits.from_row(row) == Limits(require_tls=True)


def selected(query: str) -> list[str]:
    """The expressions a SELECT lists (none of them has a comma inside but the fingerprint's SHA2)."""
    listed = query.removeprefix("SELECT ").split(" FROM ", 1)[0]
    return listed.replace("authentication_string, 256", "authentication_string;256").split(", ")


def test_the_selects_list_the_option_columns() -> None:
    """The three SELECTs of mysql.user's option columns list them from COLUMNS, and their rows are read
    by those names."""
    assert column_list(("a", "b"), "u") == "u.a, u.b"
    assert COLUMNS[: len(LIMIT_COLUMNS)] == LIMIT_COLUMNS
    assert selected(limits._READ_LIMITS) == list(COLUMNS)
    assert selected(observe._ACCOUNT) == ["plugin", *LIMIT_COLUMNS, "{metadata}"]
    assert list(observe._ACCOUNT_COLUMNS) == ["plugin", *LIMIT_COLUMNS]
    listed = selected(inventory._ACCOUNTS)
    policy = (*lock_policy.COLUMNS, "default_lifetime")  # one fragment, {policy}, lists them
    # {created} is two columns (the owner and fingerprint a new account carries), {metadata} two (the owner
    # entry and the comment), {policy} the policy's and the default
    assert listed[-3:] == ["{created}", "{metadata}", "{policy}"]
    assert len(listed) - 3 + 2 + 2 + len(policy) == len(inventory._ACCOUNTS_ROW)
    assert listed[6:-4] == ["u.User", *(f"u.{name}" for name in COLUMNS)]
    assert inventory._ACCOUNTS_ROW[6:-10] == ("User", *COLUMNS)
    created = ("created_owner", "created_fingerprint")
    assert inventory._ACCOUNTS_ROW[-10:-5] == ("fingerprint", *created, "owner_entry", "comment")
    assert inventory._ACCOUNTS_ROW[-5:] == policy


def test_the_alter_user_statement() -> None:
    statement = alter_statement("app", "10.0.%", Limits(1, 2, 3, 4, require_tls=True))
    assert statement.params == ()
    assert statement.text == (
        "ALTER USER 'app'@'10.0.%' REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 2 MAX_UPDATES_PER_HOUR 3"
        " MAX_CONNECTIONS_PER_HOUR 4 MAX_USER_CONNECTIONS 1"
    )
    assert alter_statement("app", "%", Limits()).text == (
        "ALTER USER 'app'@'%' REQUIRE NONE WITH MAX_QUERIES_PER_HOUR 0 MAX_UPDATES_PER_HOUR 0"
        " MAX_CONNECTIONS_PER_HOUR 0 MAX_USER_CONNECTIONS 0"
    )


def test_the_statement_refuses_bad_accounts() -> None:
    with pytest.raises(InvalidAccountError):
        alter_statement("a b", "%", Limits())


def tls(**identity: object) -> Limits:
    return Limits(require_tls=True, tls_identity=TLSIdentity(**identity))  # type: ignore[arg-type]


def test_the_statement_with_a_client_certificate() -> None:
    statement = alter_statement("app", "%", tls(x509=True))
    assert statement.params == ()
    assert statement.text.startswith("ALTER USER 'app'@'%' REQUIRE X509 WITH MAX_QUERIES_PER_HOUR 0")


def test_issuer_subject_and_cipher_are_parameters() -> None:
    statement = alter_statement(
        "app", "10.0.%", tls(issuer="/CN=ca", subject="/O=it's/CN=a\\b", cipher="TLS_AES_256_GCM_SHA384")
    )
    assert statement.text == (
        "ALTER USER 'app'@'10.0.%%' REQUIRE ISSUER %s AND SUBJECT %s AND CIPHER %s WITH"
        " MAX_QUERIES_PER_HOUR 0 MAX_UPDATES_PER_HOUR 0 MAX_CONNECTIONS_PER_HOUR 0 MAX_USER_CONNECTIONS 0"
    )
    assert statement.params == ("/CN=ca", "/O=it's/CN=a\\b", "TLS_AES_256_GCM_SHA384")
    assert alter_statement("app", "%", tls(subject="/CN=app")).params == ("/CN=app",)


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        ({"x509": True, "subject": "/CN=a"}, "cannot be combined"),
        ({"subject": "CN=app"}, "invalid subject"),  # not OpenSSL's one-line form
        ({"subject": "/CN=a\x00b"}, "invalid subject"),
        ({"issuer": "/CN=caf\u00e9"}, "invalid issuer"),  # non-ASCII: the server compares \\xHH
        ({"issuer": "/CN=a\nb"}, "invalid issuer"),
        ({"subject": "/" + "a" * 1024}, "at most 1024"),
        ({"cipher": "AES' OR '1"}, "invalid cipher"),
        ({"cipher": "A:B"}, "invalid cipher"),
        ({"subject": 5}, "must be a string"),
        ({"x509": "yes"}, "must be a boolean"),
    ],
)
def test_hostile_or_unusable_identities_are_refused_before_sending(
    identity: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidOptionsError, match=message) as refused:
        alter_statement("app", "%", tls(**identity))
    assert "\x00" not in str(refused.value)
    assert "\n" not in str(refused.value)
