"""A spec's ``privileges`` in the MySQL layer's terms: one translation for accounts and roles."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.mysql import grants


def desired_grant(item: GrantSpec) -> grants.Grant:
    """One entry of ``spec.privileges`` in the MySQL layer's terms (a routine's name is its ``table``)."""
    if item.routine is not None:
        return _grant(
            frozenset(item.privileges),
            item.resolved(),
            item.routine.name,
            item.grant_option,
            frozenset(),
            item.routine.type,
        )
    return _grant(
        frozenset(item.privileges),
        item.resolved(),
        item.table,
        item.grant_option,
        frozenset(item.columns or ()),
        "",
    )


@functools.lru_cache(maxsize=1024)  # a pass asks twice (check, then converge); specs often share grants
def _grant(  # noqa: PLR0917 - the fields of one Grant
    privileges: frozenset[str],
    database: str,
    table: str,
    grant_option: bool,
    columns: frozenset[str],
    routine: str,
) -> grants.Grant:
    """The grant of these fields, checked once (a Grant is immutable: one object serves every pass)."""
    return grants.Grant(
        privileges=privileges,
        database=database,
        table=table,
        grant_option=grant_option,
        columns=columns,
        routine=routine,
    )


def desired_grants(privileges: Iterable[GrantSpec]) -> set[grants.Grant]:
    """The grants a spec's ``privileges`` ask for, in the MySQL layer's terms."""
    return {desired_grant(item) for item in privileges}
