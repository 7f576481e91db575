"""A new leader's first pass judges a connection Secret from the caches: in line when the step would write
nothing, otherwise a reason (edited, deleted, not owned, another endpoint, a password changed, templates)."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.endpoints import DefaultServerEndpoints
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets, owner_reference
from dbuser_operator.controllers.databaseuser.steps.connection_secret import ConnectionSecretStep
from dbuser_operator.credentials.endpoints import Endpoint
from dbuser_operator.credentials.render_pool import RenderPool
from tests.unit.controllers.databaseuser.test_converged import converged

PASSWORD = "s3cret-Pa55"
ENDPOINTS = DefaultServerEndpoints([], Endpoint("mysql.example", 3306, "REQUIRED"))


class Secrets:
    """The part of OwnedSecrets the step uses: the cache, and a create that lands in it."""

    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}

    def cached(self, ctx: Context, name: str) -> dict[str, Any] | None:
        return self.store.get(name)

    async def claim(self, ctx: Context, secret: dict[str, Any], what: str) -> dict[str, Any]:
        return secret

    async def create(
        self, ctx: Context, name: str, data: dict[str, str], what: str, **metadata: Any
    ) -> tuple[dict[str, Any], bool]:
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        meta = {
            "name": name,
            "uid": "uid-conn",
            "resourceVersion": "1",
            "ownerReferences": [owner_reference(ctx)],
        }
        self.store[name] = {"type": "Opaque", "metadata": meta | metadata, "data": encoded}
        return self.store[name], True

    async def delete(self, ctx: Context, name: str) -> None:
        """Nothing left over here."""


class Renderer:
    """A render pool's worker that names what it rendered."""

    async def render(self, templates: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
        return {key: f"rendered {key}" for key in templates}

    async def close(self) -> None:
        """Nothing to stop."""


def user_with_connection(**connection: Any) -> dict[str, Any]:
    obj = converged()
    obj["spec"]["connectionSecret"] = {"name": "app-connection", **connection}
    return obj


def context(obj: dict[str, Any], password: str = PASSWORD) -> Context:
    status = DatabaseUserStatus.model_validate(obj["status"])
    ctx = Context(obj=obj, user=DatabaseUser.model_validate(obj), status=status)
    ctx.password = password
    return ctx


async def written(obj: dict[str, Any]) -> tuple[ConnectionSecretStep, Secrets, dict[str, Any]]:
    """The step's Secret as a reconcile wrote it, and the resource with the status that reconcile left."""
    secrets = Secrets()
    step = ConnectionSecretStep(cast("OwnedSecrets", secrets), RenderPool([Renderer()]), ENDPOINTS)
    ctx = context(obj)
    await step.ensure(ctx)
    obj = copy.deepcopy(obj)
    obj["status"] |= ctx.status.model_dump(by_alias=True, exclude_none=True)
    return step, secrets, obj


async def test_a_secret_as_the_last_pass_wrote_it_is_in_line() -> None:
    step, _, obj = await written(user_with_connection(labels={"team": "a"}, annotations={"note": "x"}))
    assert obj["status"]["connectionSecret"] == "app-connection"
    assert step.why_write(context(obj)) is None


def _data(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    def change(secret: dict[str, Any]) -> None:
        if value is None:
            del secret["data"][key]
        else:
            secret["data"][key] = base64.b64encode(value.encode()).decode()

    return change


def _meta(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(secret: dict[str, Any]) -> None:
        secret["metadata"][key] = value

    return change


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_data("password", "typed-by-hand"), "connection Secret differs"),
        (_data("host", "elsewhere.example"), "connection Secret differs"),
        (_data("username", None), "connection Secret differs"),  # a key removed
        (_data("extra", "added by hand"), "connection Secret differs"),  # a key added
        (_meta("labels", {"team": "a"}), "connection Secret differs"),  # our managed-by label removed
        (_meta("annotations", {}), "connection Secret differs"),  # the credential version removed
        (_meta("ownerReferences", []), "connection Secret missing or not owned"),
        (lambda secret: secret.update(type="kubernetes.io/tls"), "connection Secret refused: SecretNotOwned"),
    ],
)
async def test_a_secret_changed_while_no_leader_watched_is_written(
    change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    step, secrets, obj = await written(user_with_connection(labels={"team": "a"}))
    change(secrets.store["app-connection"])
    assert step.why_write(context(obj)) == reason


async def test_a_deleted_secret_is_written() -> None:
    step, secrets, obj = await written(user_with_connection())
    del secrets.store["app-connection"]
    assert step.why_write(context(obj)) == "connection Secret missing or not owned"


async def test_what_the_caches_say_now_is_compared_not_what_was_written() -> None:
    step, secrets, obj = await written(user_with_connection())
    assert step.why_write(context(obj, password="a-new-one")) == "connection Secret differs"
    elsewhere = ConnectionSecretStep(
        cast("OwnedSecrets", secrets),
        RenderPool([Renderer()]),
        DefaultServerEndpoints([], Endpoint("moved", 3306)),
    )
    assert elsewhere.why_write(context(obj)) == "connection Secret differs"  # the server's address moved
    named = user_with_connection(endpoint="replica") | {"status": obj["status"]}
    assert step.why_write(context(named)) == "connection Secret refused: EndpointNotFound"


async def test_the_credential_version_is_compared_with_status() -> None:
    step, secrets, obj = await written(user_with_connection())
    status = obj["status"]
    assert status["credentialVersion"] == 1
    assert step.why_write(context(obj | {"status": status | {"credentialVersion": 2}})) == (
        "connection Secret differs"  # the annotation would go up to status's version
    )
    unrecorded = {key: value for key, value in status.items() if key != "credentialVersion"}
    assert step.why_write(context(obj | {"status": unrecorded})) == "credential version differs"
    secrets.store["app-connection"]["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] = "5"
    assert step.why_write(context(obj)) == "credential version differs"  # raised by hand: status follows


async def test_renames_and_removals_are_reconciled() -> None:
    step, _, obj = await written(user_with_connection())
    renamed = user_with_connection(name="other") | {"status": obj["status"]}
    assert step.why_write(context(renamed)) == "connection Secret renamed"
    removed = converged() | {"status": obj["status"]}
    assert step.why_write(context(removed)) == "connection Secret removed"
    assert step.why_write(context(converged())) is None  # none wanted, none written


TEMPLATES = {"dsn": "mysql://{{ username }}@{{ host }}", "note": "static"}


async def test_template_keys_are_taken_as_held_at_the_version_the_last_pass_recorded() -> None:
    step, secrets, obj = await written(user_with_connection(templates=TEMPLATES))
    held = secrets.store["app-connection"]
    assert base64.b64decode(held["data"]["dsn"]).decode() == "rendered dsn"
    assert obj["status"]["connectionSecretVersion"] == {
        "name": "app-connection",
        "uid": "uid-conn",
        "resourceVersion": "1",
    }
    assert step.why_write(context(obj)) is None  # no render: the Secret is the one the pass wrote


async def test_template_keys_are_not_vouched_for_at_another_version_or_without_a_record() -> None:
    step, secrets, obj = await written(user_with_connection(templates=TEMPLATES))
    secret = secrets.store["app-connection"]
    secret["data"]["dsn"] = base64.b64encode(b"edited by hand").decode()
    secret["metadata"]["resourceVersion"] = "2"  # as the API server numbers any write
    assert step.why_write(context(obj)) == "connection Secret templates not vouched for"
    secret["metadata"]["resourceVersion"] = "1"
    unrecorded = {key: value for key, value in obj["status"].items() if key != "connectionSecretVersion"}
    assert (
        step.why_write(context(obj | {"status": unrecorded})) == "connection Secret templates not vouched for"
    )


async def test_a_template_key_that_hides_an_input_is_not_vouched_for() -> None:
    step, _, obj = await written(user_with_connection(templates={"host": "{{ host }}.internal"}))
    assert step.why_write(context(obj)) == "connection Secret templates not vouched for"


async def test_a_template_key_missing_from_the_secret_is_not_vouched_for() -> None:
    step, secrets, obj = await written(user_with_connection(templates=TEMPLATES))
    del secrets.store["app-connection"]["data"]["note"]
    assert step.why_write(context(obj)) == "connection Secret templates not vouched for"
