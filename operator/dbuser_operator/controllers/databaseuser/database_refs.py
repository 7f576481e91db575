"""A grant's ``databaseRef``: the Database resource it names, in the user's own namespace, resolved from the
informer cache into its MySQL name before anything reads the grants (policy, guard, SQL, drift)."""

from __future__ import annotations

import re
from typing import Any

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.database import DATABASE_NAME_PATTERN
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import describe_server, server_key
from dbuser_operator.runtime.conditions import find_condition
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


def has_refs(user: DatabaseUser) -> bool:
    """Whether a grant of ``user`` names a Database resource."""
    return any(grant.database_ref is not None for grant in user.spec.privileges)


def resolve(databases: Informer, user: DatabaseUser, obj: dict[str, Any]) -> DatabaseUser:
    """``user`` with each databaseRef's grant naming the Database's MySQL database instead (``user`` itself
    when no grant has one). The Database is looked up in the user's own namespace only (a ref gives no
    namespace); it must be Ready for its current generation and on the user's server. Raises a
    ConditionError (DatabaseNotFound, DatabaseNotReady, DatabaseOnAnotherServer) otherwise: not retried,
    the Database's change requeues the user."""
    if not has_refs(user):
        return user
    namespace = obj["metadata"].get("namespace", "")
    grants = []
    for grant in user.spec.privileges:
        if grant.database_ref is None:
            grants.append(grant)
            continue
        name = _database_name(databases, obj, ObjectKey(namespace, grant.database_ref.name))
        grants.append(grant.model_copy(update={"database": name, "database_ref": None}))
    return user.model_copy(update={"spec": user.spec.model_copy(update={"privileges": grants})})


def _database_name(databases: Informer, user: dict[str, Any], key: ObjectKey) -> str:
    """The MySQL name of the Database ``key``, if the user may grant on it now."""
    found = databases.get(key)
    if found is None:
        raise ConditionError(
            "DatabaseNotFound",
            f"Database {key.name} (databaseRef) not found in namespace {key.namespace}",
            retry=False,
        )
    if server_key(found) != server_key(user):
        raise ConditionError(
            "DatabaseOnAnotherServer",
            f"Database {key.name} (databaseRef) is on {describe_server(server_key(found))}, the user on "
            f"{describe_server(server_key(user))}",
            retry=False,
        )
    status = found.get("status") or {}
    ready = find_condition(status.get("conditions"), "Ready")
    generation = found["metadata"].get("generation")
    current = ready is not None and ready.get("observedGeneration") in {None, generation}
    name = status.get("name")
    if (
        found["metadata"].get("deletionTimestamp")
        or ready is None
        or ready.get("status") != "True"
        or not current
        or not isinstance(name, str)
        or re.fullmatch(DATABASE_NAME_PATTERN, name) is None  # never "*": a ref names one database
    ):
        deleting = found["metadata"].get("deletionTimestamp")
        why = "being deleted" if deleting else (ready or {}).get("reason") or "not reconciled yet"
        raise ConditionError(
            "DatabaseNotReady", f"Database {key.name} (databaseRef) is not Ready ({why})", retry=False
        )
    return name
