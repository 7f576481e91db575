"""The API's privilege lists are the MySQL layer's: kept once, in ``mysql/grants/privileges.py``.

The API needs them as ordered tuples for its schema (CEL lists, messages), so the MySQL layer keeps them in
that order; the API adds ``ALL`` where a level allows it, and derives its global-only and table lists by
filtering, in the same order.
"""

from __future__ import annotations

from dbuser_operator.api import v1alpha1
from dbuser_operator.mysql import grants


def test_privilege_names_agree() -> None:
    assert set(v1alpha1.PRIVILEGES) == set(grants.PRIVILEGES) | {grants.ALL}
    assert set(v1alpha1.GLOBAL_ONLY_PRIVILEGES) == set(grants.GLOBAL_ONLY_PRIVILEGES)
    assert set(v1alpha1.TABLE_PRIVILEGES) - {grants.ALL} == set(grants.TABLE_PRIVILEGES)
    assert set(v1alpha1.COLUMN_PRIVILEGES) == set(grants.COLUMN_PRIVILEGES)
    assert set(v1alpha1.ROUTINE_PRIVILEGES) == set(grants.ROUTINE_PRIVILEGES) | {grants.ALL}


def test_the_api_lists_them_in_the_mysql_layer_s_order() -> None:
    assert (grants.ALL, *grants.PRIVILEGE_NAMES) == v1alpha1.PRIVILEGES
    assert v1alpha1.COLUMN_PRIVILEGES == grants.COLUMN_PRIVILEGE_NAMES
    assert (grants.ALL, *grants.ROUTINE_PRIVILEGE_NAMES) == v1alpha1.ROUTINE_PRIVILEGES
    assert len(set(grants.PRIVILEGE_NAMES)) == len(grants.PRIVILEGE_NAMES)  # each name once
    assert frozenset(grants.PRIVILEGE_NAMES) == grants.DATABASE_PRIVILEGES | grants.GLOBAL_ONLY_PRIVILEGES
