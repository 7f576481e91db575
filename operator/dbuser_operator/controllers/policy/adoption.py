"""Adoption under a policy: may a namespace take over an account or role the operator did not create?

Only if the entry that selects the namespace allows adoption (``allowAdoption``, default false), its
``adoptableNames`` admit the name, and everything the account or role holds today is within the entry's
bounds — judged on what the server *holds*, never on what the spec says: its own grants, every role
granted to it (recursively) with that role's grants, proxy grants (never within a policy), and its
authentication plugin (only the flavour's default unless ``allowPlugins``); a role also must not be held
by accounts outside the operator's bookkeeping (they would get what the tenant grants it). A server without
a policy
keeps the operator's bounds only (the guard's), as before policies existed.

Pure functions of the entry, the namespace and the holdings: the gate reads the holdings and raises.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbuser_operator.api.v1alpha1.server_policy import NamespacePolicy
from dbuser_operator.controllers.policy.rules import ALL, allowed_database, matches, patterns_text
from dbuser_operator.mysql.accounts.holdings import Holdings, role_name
from dbuser_operator.mysql.grants import Grant
from dbuser_operator.mysql.session.server import Flavour

DEFAULT_PLUGINS: Final[dict[Flavour, frozenset[str]]] = {
    "mysql": frozenset({"caching_sha2_password"}),
    "mariadb": frozenset({"mysql_native_password"}),
}
"""The plugins a namespace holds without allowPlugins: each flavour's default ('' is a MariaDB role's)."""

_NOTHING: Final = frozenset({"USAGE"})


def _where(grant: Grant) -> str:
    if grant.database == "*":
        return "*.*"
    if grant.routine:
        return f"{grant.routine} `{grant.database}`.`{grant.table}`"
    return f"`{grant.database}`.*" if grant.table == "*" else f"`{grant.database}`.`{grant.table}`"


def literal(grant: Grant) -> str:
    """The database a grant names, read literally: a hand-made grant on ``team_a_app`` (where MySQL reads
    each ``_`` as any one character) is judged as the database ``team_a_app``; the adoption revokes it
    before anyone else can log in, so only its name matters here."""
    return grant.database.replace("\\", "") if grant.pattern else grant.database


def grant_problems(entry: NamespacePolicy, grants: Iterable[Grant], namespace: str, source: str) -> list[str]:
    """What grants held by ``source`` (``it``, ``role 'r'@'%'``) do beyond ``entry``."""
    problems: list[str] = []
    ceiling = entry.privileges
    for grant in sorted(grants, key=_where):
        privileges = grant.privileges - _NOTHING
        where = _where(grant)
        if grant.database == "*":
            if privileges and not entry.allow_global_privileges:
                problems.append(f"{source} holds {', '.join(sorted(privileges))} on *.*")
                continue
        elif grant.pattern and "%" in grant.database.replace("\\%", "") and entry.databases is not None:
            problems.append(f"{source} holds privileges on the database pattern {grant.database}")
            continue
        elif not allowed_database(entry, literal(grant), namespace) and entry.databases is not None:
            outside = patterns_text(entry.databases, namespace)
            problems.append(f"{source} holds privileges on {where}, outside {outside}")
            continue
        if ceiling is not None and ALL not in ceiling:
            above = sorted(privileges - set(ceiling))
            if above:
                problems.append(f"{source} holds {', '.join(above)} on {where}, above the privilege ceiling")
        if grant.grant_option and not entry.allow_grant_option:
            problems.append(f"{source} holds the grant option on {where}")
    return problems


def name_problems(entry: NamespacePolicy, namespace: str, name: str) -> list[str]:
    """Why a namespace (under ``entry``) may not take over ``name`` whatever it holds; empty if it may."""
    if not entry.allow_adoption:
        return ["adopting is not allowed (allowAdoption is false)"]
    names = entry.adoptable_names
    if names is not None and not any(matches(pattern, name, namespace) for pattern in names):
        return [f"{name} is not among the adoptable names {patterns_text(names, namespace)}"]
    return []


def holding_problems(
    entry: NamespacePolicy, namespace: str, holdings: Holdings, flavour: Flavour
) -> list[str]:
    """What ``holdings`` has beyond ``entry``; empty if nothing."""
    problems = grant_problems(entry, holdings.grants, namespace, "it")
    if holdings.roles and not entry.allow_roles:
        held = ", ".join(sorted(role_name(role) for role in holdings.roles))
        problems.append(f"it holds roles {held} (allowRoles is false)")
    for role, grants in sorted(holdings.roles.items()):
        problems += grant_problems(entry, grants, namespace, f"role {role_name(role)}")
    if holdings.unreadable:
        problems.append(f"it holds roles whose privileges cannot be read: {', '.join(holdings.unreadable)}")
    if holdings.held_by:
        problems.append(f"accounts the operator does not manage hold it: {', '.join(holdings.held_by)}")
    if holdings.proxies:
        problems.append(f"it may proxy as {', '.join(holdings.proxies)}")
    plugin = holdings.plugin
    if plugin and not entry.allow_plugins and plugin not in DEFAULT_PLUGINS[flavour]:
        problems.append(f"it authenticates with {plugin} (allowPlugins is false)")
    return problems
