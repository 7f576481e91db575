"""A server's ``spec.policy``, evaluated: may a namespace use the server, and are a resource's grants, roles
and authentication within the bounds of the entry that selects the namespace.

Pure functions of the policy, the namespace's name and labels, and the spec: no I/O. A namespace may use
a server whose policy has an entry whose selector matches its labels (the first such entry applies);
label selectors match as Kubernetes' do (matchLabels AND matchExpressions). Database names compare
case-sensitively, as MySQL's do on Linux. Grants on ``*.*`` are governed by allowGlobalPrivileges only;
grants on a database, table, columns or routine by the entry's database patterns; every privilege of every
grant by the ceiling (ALL only if the ceiling lists ALL); a grant's grant option by allowGrantOption; a
DatabaseUser's password expiry by maxPasswordLifetime.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbuser_operator.api.duration import parse_days
from dbuser_operator.api.v1alpha1 import DatabaseUserSpec, Grant
from dbuser_operator.api.v1alpha1.account import PASSWORD_LIFETIME_MAX, password_lifetime_days
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRoleSpec
from dbuser_operator.api.v1alpha1.server_policy import (
    LabelSelector,
    LabelSelectorRequirement,
    NamespacePolicy,
    ServerPolicy,
)

NAMESPACE_PLACEHOLDER = "{namespace}"
ALL = "ALL"
GLOBAL = "*"


@dataclass(frozen=True)
class Violation:
    """One way a resource breaks a server's policy: the rule (``policy.namespaces[i]``, or empty when no
    entry selects the namespace) and what is wrong, for humans."""

    rule: str
    problem: str

    def message(self, server: str) -> str:
        """``<server> policy.namespaces[0]: <problem>``, or ``<server>: <problem>``."""
        return f"{server} {self.rule}: {self.problem}" if self.rule else f"{server}: {self.problem}"


def describe(server: str, violations: Sequence[Violation]) -> str:
    """One message for a condition: the violations of one rule share its prefix."""
    if not violations:
        return ""
    first = violations[0]
    if all(violation.rule == first.rule for violation in violations):
        return Violation(first.rule, "; ".join(v.problem for v in violations)).message(server)
    return "; ".join(violation.message(server) for violation in violations)


def requirement_holds(requirement: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` meet one matchExpressions item. An invalid item (In or NotIn without values,
    Exists or DoesNotExist with some) holds for nothing: Kubernetes refuses such a selector."""
    values = requirement.values or []
    present = requirement.key in labels
    match requirement.operator:
        case "In":
            return bool(values) and present and labels[requirement.key] in values
        case "NotIn":
            return bool(values) and (not present or labels[requirement.key] not in values)
        case "Exists":
            return not values and present
        case _:  # DoesNotExist
            return not values and not present


def selects(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Whether ``selector`` selects an object with ``labels`` (an empty selector selects everything)."""
    wanted = selector.match_labels or {}
    if any(labels.get(key) != value for key, value in wanted.items()):
        return False
    return all(requirement_holds(item, labels) for item in selector.match_expressions or ())


def entry_for(policy: ServerPolicy, labels: Mapping[str, str]) -> tuple[int, NamespacePolicy] | None:
    """The first entry of ``policy.namespaces`` whose selector selects ``labels``, with its index."""
    for index, entry in enumerate(policy.namespaces):
        if selects(entry.namespace_selector, labels):
            return index, entry
    return None


def expand(pattern: str, namespace: str) -> str:
    """``pattern`` with ``{namespace}`` replaced by the namespace's name."""
    return pattern.replace(NAMESPACE_PLACEHOLDER, namespace)


def matches(pattern: str, name: str, namespace: str) -> bool:
    """Whether a database or account ``name`` matches ``pattern`` ('*' any run of characters,
    case-sensitive)."""
    parts = (re.escape(part) for part in expand(pattern, namespace).split("*"))
    return re.fullmatch(".*".join(parts), name, flags=re.DOTALL) is not None


def allowed_database(entry: NamespacePolicy, database: str, namespace: str) -> bool:
    """Whether ``entry`` lets grants name ``database`` (any database when it has no patterns)."""
    patterns = entry.databases
    return patterns is None or any(matches(p, database, namespace) for p in patterns)


def patterns_text(patterns: Sequence[str], namespace: str) -> str:
    """``team-a_*`` or ``team-a_*, shared (patterns {namespace}_*, shared)``: expanded, then as written."""
    expanded = ", ".join(expand(pattern, namespace) for pattern in patterns)
    written = ", ".join(patterns)
    if expanded == written:
        return expanded
    noun = "pattern" if len(patterns) == 1 else "patterns"
    return f"{expanded} ({noun} {written})"


def _level_text(grant: Grant) -> str:
    """Where a grant applies, as GRANT writes it: ``*.*``, ```app`.*``, ```app`.`t```,
    ``PROCEDURE `app`.`p``` (the names' patterns admit no backquote)."""
    if grant.database == GLOBAL:
        return "*.*"
    if grant.routine is not None:
        return f"{grant.routine.type} `{grant.database}`.`{grant.routine.name}`"
    return f"`{grant.database}`.*" if grant.table == GLOBAL else f"`{grant.database}`.`{grant.table}`"


def grant_problems(entry: NamespacePolicy, grants: Iterable[Grant], namespace: str) -> list[str]:
    """What the grants do beyond ``entry``: global grants, databases outside the patterns, privileges
    above the ceiling, the grant option (each named once, in the order of the grants)."""
    problems: list[str] = []
    outside: list[str] = []
    above: list[str] = []
    delegated: list[str] = []
    global_grant = False
    ceiling = entry.privileges
    for grant in grants:
        if grant.database is None:
            continue  # a databaseRef: checked once resolved into the Database's name
        if grant.database == GLOBAL:
            global_grant = True
        elif not allowed_database(entry, grant.database, namespace) and grant.database not in outside:
            outside.append(grant.database)
        if ceiling is not None and ALL not in ceiling:
            above += [p for p in grant.privileges if p not in ceiling and p not in above]
        if grant.grant_option and not entry.allow_grant_option:
            delegated.append(_level_text(grant))
    if global_grant and not entry.allow_global_privileges:
        problems.append("grants on *.* are not allowed (allowGlobalPrivileges is false)")
    if outside and entry.databases is not None:
        names = ", ".join(f'"{name}"' for name in outside)
        noun, verb = ("database", "is") if len(outside) == 1 else ("databases", "are")
        problems.append(f"{noun} {names} {verb} outside {patterns_text(entry.databases, namespace)}")
    if above and ceiling is not None:
        verb = "is" if len(above) == 1 else "are"
        limit = ", ".join(ceiling) or "(none)"
        problems.append(f"{', '.join(above)} {verb} above the privilege ceiling {limit}")
    if delegated:
        levels = ", ".join(dict.fromkeys(delegated))
        problems.append(f"grantOption is not allowed (allowGrantOption is false): on {levels}")
    return problems


def password_lifetime_problems(entry: NamespacePolicy, spec: DatabaseUserSpec) -> list[str]:
    """maxPasswordLifetime: spec.account.passwordExpire must be an interval no longer than it."""
    if entry.max_password_lifetime is None:
        return []
    cap = parse_days(entry.max_password_lifetime, most=PASSWORD_LIFETIME_MAX)
    expire = spec.account.password_expire if spec.account is not None else None
    days = password_lifetime_days(expire) if expire is not None else None
    if days is not None and days <= cap:
        return []
    shown = f"is {expire}" if expire is not None else "is unset (the password never expires)"
    return [
        f"passwords must expire within {cap} days (maxPasswordLifetime {entry.max_password_lifetime}):"
        f" spec.account.passwordExpire {shown}"
    ]


def _evaluate(
    policy: ServerPolicy | None,
    namespace: str,
    labels: Mapping[str, str],
    problems: Callable[[NamespacePolicy], list[str]],
) -> list[Violation]:
    """No policy: nothing. No entry selects the namespace: that. Else ``problems`` of the entry that does."""
    if policy is None:
        return []
    found = entry_for(policy, labels)
    if found is None:
        return [
            Violation(
                "", f"namespace {namespace} may not use it (no entry of spec.policy.namespaces selects it)"
            )
        ]
    index, entry = found
    return [Violation(f"policy.namespaces[{index}]", problem) for problem in problems(entry)]


def user_violations(
    policy: ServerPolicy | None, namespace: str, labels: Mapping[str, str], spec: DatabaseUserSpec
) -> list[Violation]:
    """How a DatabaseUser of ``namespace`` (with ``labels``) breaks ``policy``; empty if it does not (or
    there is no policy)."""

    def problems(entry: NamespacePolicy) -> list[str]:
        found = grant_problems(entry, spec.privileges, namespace)
        roles = list(dict.fromkeys([*spec.roles, *spec.default_roles]))
        if roles and not entry.allow_roles:
            found.append(f"roles are not allowed (allowRoles is false): spec.roles names {', '.join(roles)}")
        found += password_lifetime_problems(entry, spec)
        method = spec.authentication
        if method is not None and method.plugin is not None and not entry.allow_plugins:
            found.append(
                "choosing the authentication plugin is not allowed (allowPlugins is false): "
                f"spec.authentication.plugin is {method.plugin}"
            )
        if method is not None and method.workload is not None and not entry.allow_workload_identity:
            found.append(
                "workload identity is not allowed (allowWorkloadIdentity is false): "
                f"spec.authentication.workload names ServiceAccount {method.workload.service_account_name}"
            )
        return found

    return _evaluate(policy, namespace, labels, problems)


def role_violations(
    policy: ServerPolicy | None, namespace: str, labels: Mapping[str, str], spec: DatabaseRoleSpec
) -> list[Violation]:
    """How a DatabaseRole of ``namespace`` (with ``labels``) breaks ``policy``: roles must be allowed, and
    its grants obey the same rules as a DatabaseUser's."""

    def problems(entry: NamespacePolicy) -> list[str]:
        if not entry.allow_roles:
            return ["DatabaseRoles are not allowed (allowRoles is false)"]
        return grant_problems(entry, spec.privileges, namespace)

    return _evaluate(policy, namespace, labels, problems)


def database_violations(
    policy: ServerPolicy | None, namespace: str, labels: Mapping[str, str], name: str
) -> list[Violation]:
    """How a Database of ``namespace`` named ``name`` breaks ``policy``: the name must match the entry's
    ``databases`` patterns (none: any name, as for grants)."""

    def problems(entry: NamespacePolicy) -> list[str]:
        if allowed_database(entry, name, namespace) or entry.databases is None:
            return []
        return [f"database {name} is outside {patterns_text(entry.databases, namespace)}"]

    return _evaluate(policy, namespace, labels, problems)
