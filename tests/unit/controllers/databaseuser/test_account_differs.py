"""One comparison of an account with its spec for the drift check and the first pass: what was not read
differs only under ``strict``; what was read and differs, differs for both."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.databaseuser.account_differs import account_differs
from dbuser_operator.mysql.accounts import account_metadata
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from tests.unit.controllers.databaseuser.test_converged import MYSQL, account, converged

USER = DatabaseUser.model_validate(converged())


def read(state: AccountState, user: DatabaseUser = USER, *, grants_differ: bool = False) -> tuple[bool, bool]:
    """(the drift check's answer, the first pass's answer)."""
    return tuple(  # type: ignore[return-value]
        account_differs(state, user, MYSQL, grants_differ=grants_differ, strict=strict)
        for strict in (False, True)
    )


def with_comment(comment: str) -> DatabaseUser:
    obj = converged()
    obj["spec"]["comment"] = comment
    return DatabaseUser.model_validate(obj)


def test_an_account_in_line_differs_for_neither() -> None:
    assert read(account(USER)) == (False, False)
    owner = account(USER).owner
    entry = account_metadata.owner_entry(owner.namespace, owner.name, owner.uid)
    assert read(replace(account(USER), metadata=AccountMetadata(entry))) == (False, False)


@pytest.mark.parametrize(
    "changes",
    [{"password_intact": None}, {"policy": None}],
    ids=["no fingerprint", "policy not read"],
)
def test_what_was_not_read_differs_only_when_strict(changes: dict[str, Any]) -> None:
    assert read(replace(account(USER), **changes)) == (False, True)


def test_a_comment_without_the_attributes_differs_only_when_strict() -> None:
    user = with_comment("owned by team a")
    assert read(account(user), user) == (False, True)


@pytest.mark.parametrize(
    "changes",
    [
        {"present": False},
        {"password_intact": False},
        {"limits": None},
        {"policy": LockPolicy(locked=True)},
        {"metadata": AccountMetadata(owner={"uid": "someone-else"})},
    ],
    ids=["dropped", "password set by hand", "limits", "locked by hand", "owner entry edited"],
)
def test_what_was_read_and_differs_differs_for_both(changes: dict[str, Any]) -> None:
    assert read(replace(account(USER), **changes)) == (True, True)


def test_grants_that_differ_differ_for_both() -> None:
    assert read(account(USER), grants_differ=True) == (True, True)
