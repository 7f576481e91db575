"""Owner metadata: what is merged into an account's attributes, and the comment's bounds."""

from __future__ import annotations

import json

import pydantic
import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.mysql.accounts.account_metadata import (
    COMMENT_ATTRIBUTE,
    OWNER_ATTRIBUTE,
    AccountMetadata,
    columns,
    owner_entry,
    patch,
    supports_attributes,
    validate_comment,
)
from dbuser_operator.mysql.session.server import ServerInfo

OWNER = owner_entry("team-a", "app", "uid-1")


def test_the_owner_entry_names_the_operator_and_the_resource() -> None:
    assert OWNER == {"managedBy": "dbuser-operator", "namespace": "team-a", "name": "app", "uid": "uid-1"}


def test_only_mysql_8_0_21_and_later_keep_attributes() -> None:
    assert supports_attributes(ServerInfo("mysql", (9, 7, 0)))
    assert supports_attributes(ServerInfo("mysql", (8, 0, 21)))
    assert not supports_attributes(ServerInfo("mysql", (8, 0, 20)))
    assert not supports_attributes(ServerInfo("mariadb", (11, 8, 9)))
    assert columns(ServerInfo("mariadb", (10, 11, 6)), "u") == "NULL, NULL"
    assert "u.User_attributes" in columns(ServerInfo("mysql", (9, 7, 0)), "u")
    with pytest.raises(ValueError, match="alias"):
        columns(ServerInfo("mysql", (9, 7, 0)), "u; DROP")


def test_a_new_account_gets_the_owner_and_the_comment() -> None:
    wanted = {OWNER_ATTRIBUTE: OWNER, COMMENT_ATTRIBUTE: "billing"}
    assert patch(AccountMetadata(), OWNER, "billing") == wanted
    assert patch(AccountMetadata(), OWNER) == {OWNER_ATTRIBUTE: OWNER}


def test_an_account_in_line_needs_nothing() -> None:
    assert patch(AccountMetadata(OWNER, "billing"), OWNER, "billing") == {}
    assert patch(AccountMetadata(OWNER, "a DBA's note"), OWNER, None) == {}  # unset: left as it is


def test_a_hand_edit_is_undone_key_by_key() -> None:
    forged = {**OWNER, "namespace": "team-b", "note": "mine"}
    assert patch(AccountMetadata(forged, None), OWNER) == {OWNER_ATTRIBUTE: {**OWNER, "note": None}}
    assert patch(AccountMetadata("team-b", None), OWNER) == {OWNER_ATTRIBUTE: OWNER}  # not an object


def test_an_empty_comment_removes_it_and_release_removes_the_owner() -> None:
    assert patch(AccountMetadata(OWNER, "old"), OWNER, "") == {COMMENT_ATTRIBUTE: None}
    assert patch(AccountMetadata(OWNER, None), OWNER, "") == {}
    assert patch(AccountMetadata(OWNER, "old"), None) == {OWNER_ATTRIBUTE: None}
    assert patch(AccountMetadata(), None) == {}


@pytest.mark.parametrize(
    "comment", ['"}, "dbuser-operator.dev/owner": {"namespace": "team-b"', "it's `x`; DROP USER x", "\\"]
)
def test_a_comment_stays_one_json_string(comment: str) -> None:
    sent = json.dumps(patch(AccountMetadata(), OWNER, comment))
    assert json.loads(sent) == {OWNER_ATTRIBUTE: OWNER, COMMENT_ATTRIBUTE: comment}


def test_the_columns_are_parsed_as_json() -> None:
    found = AccountMetadata.from_columns(json.dumps(OWNER).encode(), '"billing"')
    assert found == AccountMetadata(OWNER, "billing")
    assert AccountMetadata.from_columns(None, None) == AccountMetadata()


@pytest.mark.parametrize("comment", ["x" * 257, "line\nbreak", "\u202eevil", "tab\there", "nbsp\u00a0"])
def test_a_comment_beyond_its_bounds_is_refused_by_the_model_and_the_mysql_layer(comment: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="comment"):
        DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "p"}, "comment": comment})
    with pytest.raises(ValueError, match="printable"):
        validate_comment(comment)


@pytest.mark.parametrize("comment", ["", "x" * 256, 'billing API, "team" payments ✓ é'])
def test_a_printable_comment_is_accepted(comment: str) -> None:
    spec = DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "p"}, "comment": comment})
    assert spec.comment == validate_comment(comment)
