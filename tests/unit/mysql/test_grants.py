"""Grants without a server: validation, what ALL means, reading rows, and the plan of GRANT/REVOKE."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbuser_operator.mysql import InvalidAccountError, InvalidGrantError, ServerInfo, classify
from dbuser_operator.mysql.errors import PrivilegeMisplacedError, PrivilegeUnknownError
from dbuser_operator.mysql.grants import (
    ALL,
    DATABASE_PRIVILEGES,
    FLAVOUR_ONLY_PRIVILEGES,
    GLOBAL,
    GLOBAL_ONLY_PRIVILEGES,
    PRIVILEGES,
    TABLE_PRIVILEGES,
    Grant,
    changes,
    check,
    expand_all,
    grantee,
    grants_from_rows,
    is_grantee,
    normalise,
    parse_schema,
    plan,
    refusals,
    server_privileges,
    split_grantee,
    summary,
)
from dbuser_operator.mysql.identifiers import escape_wildcards

MARIADB = ServerInfo("mariadb", (10, 11, 6))
MARIADB_11_4 = ServerInfo("mariadb", (11, 4, 2))
MYSQL = ServerInfo("mysql", (8, 0, 36))
MYSQL_84 = ServerInfo("mysql", (8, 4, 3))


def g(privileges: str, database: str = "app", table: str = "*", grant_option: bool = False) -> Grant:
    """A wanted grant from ``"SELECT, INSERT"``."""
    return Grant(frozenset(p.strip() for p in privileges.split(",")), database, table, grant_option)


def seen(
    privileges: str,
    database: str = "app",
    table: str = "*",
    grant_option: bool = False,
    pattern: bool = False,
) -> Grant:
    """A grant as read from the server."""
    names = [p.strip() for p in privileges.split(",") if p.strip()]
    return Grant.observed(names, database, table, grant_option, pattern=pattern)


def texts(current: set[Grant], desired: set[Grant], server: ServerInfo = MARIADB) -> list[str]:
    statements = plan(current, desired, server, user="app", host="%")
    assert all(statement.params == () for statement in statements)  # no parameters: '%' stays as it is
    return [statement.text for statement in statements]


# --- Grant: what a wanted grant may be -------------------------------------------------------------------


def test_a_grant_normalises_privilege_names() -> None:
    grant = Grant(frozenset({" select", "create   temporary tables", "Insert "}), "app")
    assert grant.privileges == {"SELECT", "CREATE TEMPORARY TABLES", "INSERT"}
    assert Grant(frozenset({"all privileges"}), "app").privileges == {ALL}
    assert grant.level == ("app", "*")
    assert grant == Grant(frozenset({"SELECT", "INSERT", "CREATE TEMPORARY TABLES"}), "app")


def test_a_grant_accepts_any_iterable_of_names_and_is_hashable() -> None:
    grant = Grant(["SELECT", "SELECT"], "app")  # type: ignore[arg-type]
    assert grant.privileges == frozenset({"SELECT"})
    assert len({grant, Grant(frozenset({"SELECT"}), "app")}) == 1


@pytest.mark.parametrize("privilege", sorted(PRIVILEGES | {ALL}))
def test_every_listed_privilege_is_accepted_globally(privilege: str) -> None:
    assert Grant(frozenset({privilege}), "*").privileges == {privilege}


@pytest.mark.parametrize("privilege", sorted(DATABASE_PRIVILEGES))
def test_database_privileges_on_a_database(privilege: str) -> None:
    assert Grant(frozenset({privilege}), "app_db").level == ("app_db", "*")


@pytest.mark.parametrize("privilege", sorted(GLOBAL_ONLY_PRIVILEGES))
@pytest.mark.parametrize(("database", "table"), [("app", "*"), ("app", "t")])
def test_global_only_privileges_elsewhere_are_refused(privilege: str, database: str, table: str) -> None:
    with pytest.raises(InvalidGrantError, match=r"can only be granted on \*\.\*") as refused:
        Grant(frozenset({privilege}), database, table)
    assert refused.value.reason == "PrivilegeMisplaced"
    assert f"{database}.{table}" in refused.value.message


@pytest.mark.parametrize("privilege", sorted(TABLE_PRIVILEGES | {ALL}))
def test_table_privileges_on_a_table(privilege: str) -> None:
    assert Grant(frozenset({privilege}), "app", "orders").level == ("app", "orders")


@pytest.mark.parametrize("privilege", sorted(DATABASE_PRIVILEGES - TABLE_PRIVILEGES))
def test_routine_event_and_lock_privileges_on_a_table_are_refused(privilege: str) -> None:
    with pytest.raises(InvalidGrantError, match="cannot be granted on a table"):
        Grant(frozenset({privilege}), "app", "orders")


@pytest.mark.parametrize(
    ("privileges", "database", "table", "message"),
    [
        ({"SELECT; DROP USER root"}, "app", "*", "'SELECT; DROP USER ROOT': not a privilege name"),
        ({"SELECT`"}, "app", "*", "invalid privilege"),
        ({"SELECT 'x'"}, "app", "*", "invalid privilege"),
        ({"S" * 65}, "*", "*", "invalid privilege"),
        ({"SÉLECT"}, "app", "*", "invalid privilege"),
        ({"GRANT OPTION"}, "app", "*", "use grant_option"),
        ({"USAGE"}, "app", "*", "USAGE is not a privilege to list"),
        (set(), "app", "*", "no privileges"),
        ({"ALL", "SELECT"}, "app", "*", "ALL stands for every privilege"),
        ({"SELECT"}, "*", "orders", "a table grant needs a database"),
        ({"SELECT"}, "app.x", "*", "invalid database name"),
        ({"SELECT"}, "app`", "*", "invalid database name"),
        ({"SELECT"}, "app%", "*", "invalid database name"),
        ({"SELECT"}, "a\\_b", "*", "invalid database name"),
        ({"SELECT"}, "", "*", "invalid database name"),
        ({"SELECT"}, "x" * 65, "*", "invalid database name"),
        ({"SELECT"}, "app", "t t", "invalid table name"),
        ({"SELECT"}, "app", "", "invalid table name"),
    ],
)
def test_invalid_grants_are_refused_clearly(
    privileges: set[str], database: str, table: str, message: str
) -> None:
    with pytest.raises(InvalidGrantError, match=message):
        Grant(frozenset(privileges), database, table)


def test_a_single_string_is_not_a_set_of_privileges() -> None:
    with pytest.raises(InvalidGrantError, match="not a single string"):
        Grant("SELECT", "app")  # type: ignore[arg-type]
    with pytest.raises(InvalidGrantError, match="must be a string"):
        Grant(frozenset({1}), "app")  # type: ignore[arg-type]


def test_wanted_grants_cannot_be_patterns_and_flags_are_booleans() -> None:
    with pytest.raises(InvalidGrantError, match="wildcard patterns cannot be granted"):
        Grant(frozenset({"SELECT"}), "app", pattern=True)
    with pytest.raises(InvalidGrantError, match="booleans"):
        Grant(frozenset({"SELECT"}), "app", grant_option="yes")  # type: ignore[arg-type]


def test_observed_grants_take_what_the_server_reports() -> None:
    grant = Grant.observed({"DELETE HISTORY", "BINLOG MONITOR"}, "*", "*")
    assert grant.privileges == {"DELETE HISTORY", "BINLOG MONITOR"}
    assert Grant.observed((), "app", "*", True).privileges == frozenset()  # grant option alone
    assert Grant.observed({"SELECT"}, "app_%", pattern=True).pattern
    assert Grant.observed({"SELECT"}, "weird name é", "t t").level == ("weird name é", "t t")
    with pytest.raises(InvalidGrantError, match="unexpected privilege"):
        Grant.observed({"SELECT; DROP"}, "app")
    with pytest.raises(InvalidGrantError, match="unexpected object name"):
        Grant.observed({"SELECT"}, "a\0b")
    with pytest.raises(InvalidGrantError, match="unexpected grant level"):
        Grant.observed({"SELECT"}, "*", "t")
    with pytest.raises(InvalidGrantError, match="unexpected grant level"):
        Grant.observed({"SELECT"}, "a_%", "t", pattern=True)


def test_str_of_a_grant() -> None:
    assert (
        str(g("SELECT, INSERT", "app_db", grant_option=True))
        == "INSERT, SELECT ON `app_db`.* WITH GRANT OPTION"
    )
    assert str(g("PROCESS", "*")) == "PROCESS ON *.*"
    assert str(g("SELECT", "app", "t")) == "SELECT ON `app`.`t`"
    assert str(seen("", "app", grant_option=True)) == "USAGE ON `app`.* WITH GRANT OPTION"
    assert str(seen("SELECT", "app_%", pattern=True)) == "SELECT ON `app_%`.* (wildcard pattern)"


def test_grant_errors_are_classified_as_they_are() -> None:
    with pytest.raises(InvalidGrantError) as refused:
        Grant(frozenset({"SELECT"}), "a b")
    assert classify(refused.value) is refused.value


# --- What ALL means -------------------------------------------------------------------------------------


def test_all_on_mariadb_as_found_on_10_11() -> None:
    assert expand_all(("app", "*"), MARIADB) == DATABASE_PRIVILEGES | {"DELETE HISTORY"}
    assert len(expand_all(("app", "*"), MARIADB)) == 19
    assert expand_all(("app", "t"), MARIADB) == TABLE_PRIVILEGES | {"DELETE HISTORY"}
    everything = expand_all(GLOBAL, MARIADB)
    assert len(everything) == 38
    assert "BINLOG MONITOR" in everything
    assert "REPLICATION CLIENT" not in everything  # MariaDB's name for it is BINLOG MONITOR
    assert {"SET USER", "READ_ONLY ADMIN", "SLAVE MONITOR", "DELETE HISTORY"} <= everything
    assert expand_all(("app", "*"), MARIADB) < everything


def test_all_on_mariadb_11_3_and_later_has_show_create_routine() -> None:
    assert expand_all(("app", "*"), MARIADB_11_4) == expand_all(("app", "*"), MARIADB) | {
        "SHOW CREATE ROUTINE"
    }
    assert "SHOW CREATE ROUTINE" in expand_all(GLOBAL, MARIADB_11_4)
    assert expand_all(("app", "t"), MARIADB_11_4) == expand_all(("app", "t"), MARIADB)


@pytest.mark.parametrize("server", [MYSQL, MYSQL_84])
def test_all_on_mysql_is_the_documented_static_list(server: ServerInfo) -> None:
    mariadb_only = {name for name, flavour in FLAVOUR_ONLY_PRIVILEGES.items() if flavour == "mariadb"}
    assert expand_all(("app", "*"), server) == DATABASE_PRIVILEGES - mariadb_only
    assert expand_all(("app", "t"), server) == TABLE_PRIVILEGES - mariadb_only
    assert expand_all(GLOBAL, server) == PRIVILEGES - mariadb_only
    assert len(expand_all(GLOBAL, server)) == 30


def test_server_privileges_expands_all_and_renames_for_mariadb() -> None:
    assert server_privileges(g("ALL"), MARIADB) == expand_all(("app", "*"), MARIADB)
    assert server_privileges(g("REPLICATION CLIENT, PROCESS", "*"), MARIADB) == {"BINLOG MONITOR", "PROCESS"}
    assert server_privileges(g("REPLICATION CLIENT, PROCESS", "*"), MYSQL) == {
        "REPLICATION CLIENT",
        "PROCESS",
    }


def test_normalise_is_what_reading_back_gives() -> None:
    desired = {g("SELECT", "app"), g("INSERT", "app", grant_option=True), g("ALL", "app", "t")}
    assert normalise(desired, MARIADB) == {
        seen("INSERT, SELECT", "app", grant_option=True),
        Grant.observed(expand_all(("app", "t"), MARIADB), "app", "t"),
    }


# --- Reading: GRANTEE strings, stored database names, rows ----------------------------------------------


def test_grantee_strings() -> None:
    assert grantee("app", "%") == "'app'@'%'"
    assert grantee("App", "Example.COM") == "'App'@'example.com'"  # the servers store hosts in lower case
    assert split_grantee("'app'@'10.0.%'") == ("app", "10.0.%")
    assert split_grantee("app@%") is None
    assert split_grantee("''") is None
    assert is_grantee("'app'@'example.com'", "app", "Example.COM")
    assert not is_grantee("'App'@'%'", "app", "%")  # GRANTEE compares case-insensitively; we do not
    assert not is_grantee("'app'@'%'", "app", "localhost")


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("app", ("app", False)),
        ("app\\_db", ("app_db", False)),
        ("a\\_b\\_c", ("a_b_c", False)),
        ("a\\%b", ("a%b", False)),
        ("app-1$x", ("app-1$x", False)),
        ("app_db", ("app_db", True)),  # unescaped: a wildcard, matches appXdb
        ("app%", ("app%", True)),
        ("a\\_b_c", ("a\\_b_c", True)),
        ("a\\b", ("a\\b", True)),
        ("trailing\\", ("trailing\\", True)),
    ],
)
def test_stored_database_names(stored: str, expected: tuple[str, bool]) -> None:
    assert parse_schema(stored) == expected


@given(st.text(alphabet="ab_-$%9", min_size=1, max_size=20))
def test_escaping_and_parsing_round_trip(name: str) -> None:
    assert parse_schema(escape_wildcards(name)) == (name, False)


def test_grants_from_rows_one_per_level() -> None:
    rows = [
        (0, "*", "*", "USAGE", "NO"),  # an account with no global privilege
        (1, "app\\_db", "*", "SELECT", "NO"),
        (1, "app\\_db", "*", "INSERT", "NO"),
        (1, "other", "*", "USAGE", "YES"),  # the grant option alone
        (1, "app%", "*", "SELECT", "NO"),
        (2, "app_db", "t_1", "SELECT", "YES"),
        (2, "app_db", "t_1", "UPDATE", "YES"),
    ]
    assert grants_from_rows(rows) == {
        seen("SELECT, INSERT", "app_db"),
        seen("", "other", grant_option=True),
        seen("SELECT", "app%", pattern=True),
        seen("SELECT, UPDATE", "app_db", "t_1", grant_option=True),
    }


def test_grants_from_rows_global_with_grant_option() -> None:
    assert grants_from_rows([(0, "*", "*", "USAGE", "YES")]) == {seen("", "*", grant_option=True)}
    assert grants_from_rows([(0, "*", "*", "PROCESS", "NO"), (0, "*", "*", "SELECT", "NO")]) == {
        seen("PROCESS, SELECT", "*")
    }
    assert grants_from_rows([]) == frozenset()


# --- plan: the fewest statements -------------------------------------------------------------------------


def test_equal_grants_need_nothing() -> None:
    current = {
        seen("SELECT, INSERT", "app"),
        seen("PROCESS", "*"),
        seen("SELECT", "app", "t", grant_option=True),
    }
    desired = {g("INSERT, SELECT", "app"), g("PROCESS", "*"), g("SELECT", "app", "t", grant_option=True)}
    assert texts(current, desired) == []
    assert texts(set(), set()) == []


def test_missing_privileges_are_granted() -> None:
    assert texts(set(), {g("SELECT, INSERT")}) == ["GRANT INSERT, SELECT ON `app`.* TO 'app'@'%'"]
    assert texts({seen("SELECT")}, {g("SELECT, INSERT")}) == ["GRANT INSERT ON `app`.* TO 'app'@'%'"]


def test_extra_privileges_are_revoked_and_nothing_else() -> None:
    current = {seen("SELECT, INSERT, DELETE")}
    assert texts(current, {g("SELECT, INSERT")}) == ["REVOKE DELETE ON `app`.* FROM 'app'@'%'"]


def test_a_change_revokes_first_then_grants() -> None:
    assert texts({seen("SELECT, DELETE")}, {g("SELECT, INSERT")}) == [
        "REVOKE DELETE ON `app`.* FROM 'app'@'%'",
        "GRANT INSERT ON `app`.* TO 'app'@'%'",
    ]


def test_a_level_granted_by_hand_is_revoked_entirely() -> None:
    current = {seen("SELECT"), seen("SELECT, UPDATE", "hand", grant_option=True)}
    assert texts(current, {g("SELECT")}) == [
        "REVOKE SELECT, UPDATE ON `hand`.* FROM 'app'@'%'",
        "REVOKE GRANT OPTION ON `hand`.* FROM 'app'@'%'",
    ]


def test_everything_is_revoked_when_nothing_is_wanted() -> None:
    current = {seen("PROCESS", "*"), seen("SELECT", "app"), seen("SELECT", "app", "t")}
    assert texts(current, set()) == [
        "REVOKE PROCESS ON *.* FROM 'app'@'%'",
        "REVOKE SELECT ON `app`.* FROM 'app'@'%'",
        "REVOKE SELECT ON `app`.`t` FROM 'app'@'%'",
    ]


def test_grant_option_on() -> None:
    assert texts({seen("SELECT")}, {g("SELECT", grant_option=True)}) == [
        "GRANT USAGE ON `app`.* TO 'app'@'%' WITH GRANT OPTION"
    ]
    assert texts({seen("SELECT")}, {g("SELECT, INSERT", grant_option=True)}) == [
        "GRANT INSERT ON `app`.* TO 'app'@'%' WITH GRANT OPTION"
    ]
    assert texts(set(), {g("SELECT", "*", grant_option=True)}) == [
        "GRANT SELECT ON *.* TO 'app'@'%' WITH GRANT OPTION"
    ]


def test_grant_option_off() -> None:
    assert texts({seen("SELECT", grant_option=True)}, {g("SELECT")}) == [
        "REVOKE GRANT OPTION ON `app`.* FROM 'app'@'%'"
    ]
    assert texts({seen("", grant_option=True)}, set()) == ["REVOKE GRANT OPTION ON `app`.* FROM 'app'@'%'"]
    assert texts({seen("", "*", grant_option=True)}, set()) == ["REVOKE GRANT OPTION ON *.* FROM 'app'@'%'"]


def test_grant_option_kept_while_privileges_are_added() -> None:
    # GRANT without WITH GRANT OPTION does not take the option away: nothing about it is sent.
    assert texts({seen("SELECT", grant_option=True)}, {g("SELECT, INSERT", grant_option=True)}) == [
        "GRANT INSERT ON `app`.* TO 'app'@'%'"
    ]


def test_grant_option_per_level() -> None:
    current = {seen("SELECT", "a", grant_option=True), seen("SELECT", "b")}
    desired = {g("SELECT", "a"), g("SELECT", "b", grant_option=True)}
    assert texts(current, desired) == [
        "REVOKE GRANT OPTION ON `a`.* FROM 'app'@'%'",
        "GRANT USAGE ON `b`.* TO 'app'@'%' WITH GRANT OPTION",
    ]


def test_all_is_granted_as_the_servers_list_and_then_is_equal() -> None:
    statements = texts(set(), {g("ALL")})
    assert statements == [
        "GRANT " + ", ".join(sorted(expand_all(("app", "*"), MARIADB))) + " ON `app`.* TO 'app'@'%'"
    ]
    assert "DELETE HISTORY" in statements[0]
    assert texts({Grant.observed(expand_all(("app", "*"), MARIADB), "app")}, {g("ALL")}) == []
    assert texts({Grant.observed(expand_all(GLOBAL, MARIADB), "*")}, {g("ALL", "*")}) == []
    assert (
        texts({Grant.observed(expand_all(("app", "t"), MYSQL), "app", "t")}, {g("ALL", "app", "t")}, MYSQL)
        == []
    )


def test_all_with_one_privilege_missing_grants_that_one() -> None:
    current = {Grant.observed(expand_all(("app", "*"), MARIADB) - {"EVENT"}, "app")}
    assert texts(current, {g("ALL")}) == ["GRANT EVENT ON `app`.* TO 'app'@'%'"]


def test_from_all_to_a_few_revokes_the_rest() -> None:
    current = {Grant.observed(expand_all(("app", "*"), MYSQL), "app")}
    (statement,) = texts(current, {g("SELECT, INSERT")}, MYSQL)
    assert statement.startswith("REVOKE ALTER, ALTER ROUTINE, CREATE, ")
    assert " SELECT" not in statement
    assert "INSERT" not in statement


def test_replication_client_is_binlog_monitor_on_mariadb_only() -> None:
    assert texts({seen("BINLOG MONITOR", "*")}, {g("REPLICATION CLIENT", "*")}, MARIADB) == []
    assert texts(set(), {g("REPLICATION CLIENT", "*")}, MARIADB) == [
        "GRANT BINLOG MONITOR ON *.* TO 'app'@'%'"
    ]
    assert texts(set(), {g("REPLICATION CLIENT", "*")}, MYSQL) == [
        "GRANT REPLICATION CLIENT ON *.* TO 'app'@'%'"
    ]


def test_database_names_are_escaped_at_the_database_level_only() -> None:
    assert texts(set(), {g("SELECT", "app_db"), g("SELECT", "app_db", "t_1")}) == [
        "GRANT SELECT ON `app\\_db`.* TO 'app'@'%'",
        "GRANT SELECT ON `app_db`.`t_1` TO 'app'@'%'",
    ]
    assert texts({seen("SELECT", "app_db")}, {g("SELECT", "app_db")}) == []  # read back unescaped


def test_a_wildcard_level_by_hand_is_revoked_as_it_is_spelt() -> None:
    current = {seen("SELECT", "app_db", pattern=True), seen("SELECT", "app%", pattern=True)}
    assert texts(current, {g("SELECT", "app_db")}) == [
        "REVOKE SELECT ON `app%`.* FROM 'app'@'%'",
        "GRANT SELECT ON `app\\_db`.* TO 'app'@'%'",
        "REVOKE SELECT ON `app_db`.* FROM 'app'@'%'",  # the pattern level sorts after the literal one
    ]


def test_privileges_the_api_does_not_know_are_revoked() -> None:
    current = {seen("SELECT, DELETE HISTORY", "app"), seen("BACKUP_ADMIN, READ_ONLY ADMIN", "*")}
    assert texts(current, {g("SELECT")}) == [
        "REVOKE BACKUP_ADMIN, READ_ONLY ADMIN ON *.* FROM 'app'@'%'",
        "REVOKE DELETE HISTORY ON `app`.* FROM 'app'@'%'",
    ]


def test_grants_of_one_level_are_merged() -> None:
    desired = {g("SELECT", "app"), g("INSERT", "app", grant_option=True)}
    assert texts(set(), desired) == ["GRANT INSERT, SELECT ON `app`.* TO 'app'@'%' WITH GRANT OPTION"]


def test_order_is_global_then_databases_then_tables_by_name() -> None:
    desired = [
        g("SELECT", "b", "t"),
        g("SELECT", "b"),
        g("SELECT", "a", "z"),
        g("PROCESS", "*"),
        g("SELECT", "a"),
        g("SELECT", "a", "b"),
    ]
    expected = [
        "GRANT PROCESS ON *.* TO 'app'@'%'",
        "GRANT SELECT ON `a`.* TO 'app'@'%'",
        "GRANT SELECT ON `b`.* TO 'app'@'%'",
        "GRANT SELECT ON `a`.`b` TO 'app'@'%'",
        "GRANT SELECT ON `a`.`z` TO 'app'@'%'",
        "GRANT SELECT ON `b`.`t` TO 'app'@'%'",
    ]
    for seed in range(5):
        random.Random(seed).shuffle(desired)
        assert texts(set(), set(desired)) == expected


def test_the_account_is_quoted_and_validated() -> None:
    (statement,) = plan(set(), {g("SELECT")}, MARIADB, user="app", host="10.0.%")
    assert statement.text == "GRANT SELECT ON `app`.* TO 'app'@'10.0.%'"
    with pytest.raises(InvalidAccountError):
        plan(set(), {g("SELECT")}, MARIADB, user="a'b", host="%")
    with pytest.raises(InvalidAccountError):
        plan(set(), set(), MARIADB, user="app", host="bad host")


def test_change_summaries_are_for_people() -> None:
    current = {seen("SELECT, DELETE", "app", grant_option=True), seen("SELECT", "app_%", pattern=True)}
    desired = {
        g("SELECT, INSERT", "app"),
        g("PROCESS", "*", grant_option=True),
        g("SELECT", "x", grant_option=True),
    }
    assert [str(change) for change in changes(current, desired, MARIADB)] == [
        "granted PROCESS ON *.* WITH GRANT OPTION",
        "revoked DELETE ON `app`.*",
        "revoked GRANT OPTION ON `app`.*",
        "granted INSERT ON `app`.*",
        "revoked SELECT ON `app_%`.* (wildcard pattern)",
        "granted SELECT ON `x`.* WITH GRANT OPTION",
    ]


def test_change_summary_of_the_grant_option_alone() -> None:
    (change,) = changes({seen("SELECT")}, {g("SELECT", grant_option=True)}, MARIADB)
    assert str(change) == "granted GRANT OPTION ON `app`.*"


@given(
    st.sets(st.sampled_from(sorted(DATABASE_PRIVILEGES)), min_size=1),
    st.sets(st.sampled_from(sorted(DATABASE_PRIVILEGES))),
    st.booleans(),
    st.booleans(),
)
def test_applying_the_plan_reaches_the_wanted_state(
    wanted: set[str], held: set[str], wanted_option: bool, held_option: bool
) -> None:
    current = {seen(", ".join(sorted(held)), grant_option=held_option)} if held or held_option else set()
    desired = {Grant(frozenset(wanted), "app", grant_option=wanted_option)}
    state, option = set(held), held_option
    for change in changes(current, desired, MYSQL):
        if change.action == "revoke":
            assert set(change.privileges) <= state
            state -= set(change.privileges)
        elif change.action == "revoke grant option":
            option = False
        else:
            assert not set(change.privileges) & state
            state |= set(change.privileges)
            option = option or change.with_grant_option
    assert (state, option) == (wanted, wanted_option)
    assert len(changes(current, desired, MYSQL)) <= 3


# --- Privilege names against the live server's list (refusals) -------------------------------------------

MYSQL_LISTED = ServerInfo(
    "mysql",
    (8, 4, 3),
    frozenset(PRIVILEGES - {"DELETE HISTORY", "BINLOG MONITOR", "SLAVE MONITOR"})
    | {"USAGE", "GRANT OPTION", "PROXY", "BACKUP_ADMIN", "REPLICATION_SLAVE_ADMIN", "SYSTEM_VARIABLES_ADMIN"},
)
MARIADB_LISTED = ServerInfo(
    "mariadb",
    (11, 8, 3),
    frozenset(PRIVILEGES - {"CREATE ROLE", "DROP ROLE", "REPLICATION CLIENT"})
    | {"USAGE", "GRANT OPTION", "PROXY", "SHOW CREATE ROUTINE", "BINLOG ADMIN", "READ_ONLY ADMIN"},
)


@pytest.mark.parametrize(
    ("server", "grant"),
    [
        (MYSQL_LISTED, g("BACKUP_ADMIN, REPLICATION_SLAVE_ADMIN, PROCESS", "*")),
        (MYSQL_LISTED, g("ALL", "*")),
        (MYSQL_LISTED, g("CREATE ROLE", "*")),
        (MARIADB_LISTED, g("SLAVE MONITOR, BINLOG MONITOR, READ_ONLY ADMIN", "*")),
        (MARIADB_LISTED, g("REPLICATION CLIENT", "*")),  # read back as BINLOG MONITOR
        (MARIADB_LISTED, g("SHOW CREATE ROUTINE, DELETE HISTORY")),  # database level on 11.3+
        (MARIADB_LISTED, g("DELETE HISTORY, SELECT", table="t")),
    ],
)
def test_privileges_the_server_lists_where_they_are_valid(server: ServerInfo, grant: Grant) -> None:
    assert refusals([(grant.level, grant.privileges)], server) == []
    check([grant], server)


@pytest.mark.parametrize(
    ("server", "grant", "kind", "message"),
    [
        (MYSQL_LISTED, g("DROP TABLE"), "unknown", "DROP TABLE is not a privilege of MySQL 8.4.3"),
        (MYSQL_LISTED, g("SLAVE MONITOR", "*"), "unknown", "SLAVE MONITOR is a MariaDB-only privilege"),
        (MYSQL_LISTED, g("USAGE_ADMIN", "*"), "unknown", "USAGE_ADMIN is not a privilege of MySQL"),
        (MARIADB_LISTED, g("BACKUP_ADMIN", "*"), "unknown", "BACKUP_ADMIN is not a privilege of MariaDB"),
        (MARIADB_LISTED, g("CREATE ROLE", "*"), "unknown", "CREATE ROLE is a MySQL-only privilege"),
        (MYSQL_LISTED, g("BACKUP_ADMIN"), "misplaced", "BACKUP_ADMIN is a global privilege of MySQL 8.4.3"),
        (MARIADB_LISTED, g("BINLOG ADMIN"), "misplaced", 'only on *.* (database "*"), not app.*'),
        (
            MYSQL_LISTED,
            g("SELECT, SYSTEM_VARIABLES_ADMIN"),
            "misplaced",
            "SYSTEM_VARIABLES_ADMIN is a global",
        ),
    ],
)
def test_privileges_refused_by_the_server_list(
    server: ServerInfo, grant: Grant, kind: str, message: str
) -> None:
    [refusal] = refusals([(grant.level, grant.privileges)], server)
    assert (refusal.kind, refusal.privilege) == (kind, next(iter(grant.privileges - {"SELECT"})))
    assert message in refusal.message
    expected = PrivilegeUnknownError if kind == "unknown" else PrivilegeMisplacedError
    with pytest.raises(expected) as refused:
        check([grant], server)
    assert refused.value.reason == ("PrivilegeUnknown" if kind == "unknown" else "PrivilegeMisplaced")


def test_show_create_routine_is_not_a_database_privilege_before_mariadb_11_3() -> None:
    old = ServerInfo("mariadb", (10, 11, 6), MARIADB_LISTED.privileges)
    [refusal] = refusals([(("app", "*"), {"SHOW CREATE ROUTINE"})], old)
    assert refusal.kind == "misplaced"


def test_without_the_servers_list_only_static_privileges_are_known() -> None:
    assert refusals([(GLOBAL, {"PROCESS"})], MYSQL) == []
    [refusal] = refusals([(GLOBAL, {"BACKUP_ADMIN"})], MYSQL)
    assert refusal.kind == "unknown"
    assert "were not read" in refusal.message


def test_every_refused_privilege_is_named_once() -> None:
    wanted = [g("BACKUP_ADMIN, DROP TABLE, SELECT"), g("DROP TABLE", "other")]
    found = refusals([(grant.level, grant.privileges) for grant in wanted], MYSQL_LISTED)
    assert [(r.kind, r.privilege) for r in found] == [
        ("misplaced", "BACKUP_ADMIN"),
        ("unknown", "DROP TABLE"),
        ("unknown", "DROP TABLE"),
    ]
    with pytest.raises(PrivilegeUnknownError, match=r"BACKUP_ADMIN.*DROP TABLE"):
        check(wanted, MYSQL_LISTED)


def test_a_summary_names_each_level_once_with_all_kept() -> None:
    assert summary([g("ALL", "*", grant_option=True), g("SELECT, INSERT"), g("UPDATE", table="t")]) == [
        "ALL ON *.* WITH GRANT OPTION",
        "INSERT, SELECT ON `app`.*",
        "UPDATE ON `app`.`t`",
    ]
    assert summary([]) == []


def test_column_and_routine_grants_for_people_and_as_sql() -> None:
    columns = Grant(frozenset({"SELECT", "UPDATE"}), "app", "t", columns=frozenset({"B", "a"}))
    routine = Grant(frozenset({"ALL"}), "app", "Proc", routine="PROCEDURE", grant_option=True)
    assert str(columns) == "SELECT, UPDATE (a, b) ON `app`.`t`"
    assert str(routine) == "ALL ON PROCEDURE `app`.`proc` WITH GRANT OPTION"
    assert [s.text for s in plan([], [columns, routine], MYSQL, user="u", host="%")] == [
        "GRANT SELECT (`a`), UPDATE (`a`) ON `app`.`t` TO 'u'@'%'",
        "GRANT SELECT (`b`), UPDATE (`b`) ON `app`.`t` TO 'u'@'%'",
        "GRANT ALTER ROUTINE, EXECUTE ON PROCEDURE `app`.`proc` TO 'u'@'%' WITH GRANT OPTION",
    ]
    held = normalise([columns, routine], MYSQL)
    assert changes(held, [columns, routine], MYSQL) == []
    assert [str(c) for c in changes(held, [], MYSQL)] == [
        "revoked SELECT, UPDATE ON `app`.`t`.`a`",
        "revoked SELECT, UPDATE ON `app`.`t`.`b`",
        "revoked ALTER ROUTINE, EXECUTE ON PROCEDURE `app`.`proc`",
        "revoked GRANT OPTION ON PROCEDURE `app`.`proc`",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"privileges": frozenset({"DELETE"}), "table": "t", "columns": frozenset({"a"})},
            "cannot be granted on columns",
        ),
        ({"privileges": frozenset({"SELECT"}), "columns": frozenset({"a"})}, "a column grant names a table"),
        (
            {
                "privileges": frozenset({"SELECT"}),
                "table": "t",
                "columns": frozenset({"a"}),
                "grant_option": True,
            },
            "no grant option",
        ),
        (
            {"privileges": frozenset({"SELECT"}), "table": "t", "columns": frozenset({"a`"})},
            "invalid column name",
        ),
        ({"privileges": frozenset({"SELECT"}), "table": "t", "columns": "a"}, "not a single string"),
        (
            {"privileges": frozenset({"SELECT"}), "table": "p", "routine": "PROCEDURE"},
            "cannot be granted on a routine",
        ),
        (
            {"privileges": frozenset({"EXECUTE"}), "table": "p", "routine": "EVENT"},
            "a PROCEDURE or a FUNCTION",
        ),
        (
            {"privileges": frozenset({"EXECUTE"}), "table": "p;", "routine": "PROCEDURE"},
            "invalid routine name",
        ),
    ],
)
def test_invalid_column_and_routine_grants(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidGrantError, match=message):
        Grant(database="app", **kwargs)  # type: ignore[arg-type]


def test_routine_rows_are_read_with_their_grant_option() -> None:
    rows = [
        (4, "app", "P1", "Execute,Alter Routine,Grant", "NO", "PROCEDURE"),
        (3, "app", "t", "SELECT", "NO", "a"),
        (3, "app", "t", "INSERT", "NO", "a"),
    ]
    assert grants_from_rows(rows) == {
        Grant(frozenset({"EXECUTE", "ALTER ROUTINE"}), "app", "p1", True, routine="PROCEDURE"),
        Grant(frozenset({"SELECT", "INSERT"}), "app", "t", columns=frozenset({"a"})),
    }
