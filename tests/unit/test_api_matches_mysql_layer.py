"""The API's privilege enum and the MySQL layer's privilege sets are one list, kept in two places.

The API needs a literal enum for its schema; the MySQL layer must not import the API. This test is what
keeps them the same.
"""

from __future__ import annotations

from dbuser_operator.api import v1alpha1
from dbuser_operator.mysql import grants


def test_privilege_names_agree() -> None:
    assert set(v1alpha1.PRIVILEGES) == set(grants.PRIVILEGES) | {grants.ALL}
    assert set(v1alpha1.GLOBAL_ONLY_PRIVILEGES) == set(grants.GLOBAL_ONLY_PRIVILEGES)
    assert set(v1alpha1.TABLE_PRIVILEGES) - {grants.ALL} == set(grants.TABLE_PRIVILEGES)
