"""The API's privilege enum and the MySQL layer's privilege sets are one list.

The API needs a literal enum for its schema and its types, so the names are spelt there once more; its
global-only and table lists are derived from the MySQL layer's (filtered from the enum, so a name the enum
lacks would go missing). This test is what keeps them the same.
"""

from __future__ import annotations

from dbuser_operator.api import v1alpha1
from dbuser_operator.mysql import grants


def test_privilege_names_agree() -> None:
    assert set(v1alpha1.PRIVILEGES) == set(grants.PRIVILEGES) | {grants.ALL}
    assert set(v1alpha1.GLOBAL_ONLY_PRIVILEGES) == set(grants.GLOBAL_ONLY_PRIVILEGES)
    assert set(v1alpha1.TABLE_PRIVILEGES) - {grants.ALL} == set(grants.TABLE_PRIVILEGES)
