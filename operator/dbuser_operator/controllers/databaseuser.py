"""The ``DatabaseUser`` reconciler: finalizer, password from the Secret, the MySQL account."""

from __future__ import annotations

import base64
import binascii
import copy
from typing import Any

import pydantic

from dbuser_operator.api.v1alpha1 import API_VERSION, DatabaseUser, DatabaseUserSpec, SecretKeySelector
from dbuser_operator.controllers.resources import DATABASE_USERS, FIELD_MANAGER, FINALIZER
from dbuser_operator.controllers.steps import ConditionError, Context, Step
from dbuser_operator.mysql import accounts
from dbuser_operator.mysql.connection import Database
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import find_condition, set_condition
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer, update_status
from dbuser_operator.runtime.resources import ObjectKey

READY = "Ready"


class FinalizerStep:
    """Holds the resource until the account is dropped."""

    name = "finalizer"

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def ensure(self, ctx: Context) -> None:
        ctx.obj = await add_finalizer(
            self.kube, DATABASE_USERS, ctx.obj, FINALIZER, field_manager=FIELD_MANAGER
        )

    async def delete(self, ctx: Context) -> None:
        ctx.obj = await remove_finalizer(
            self.kube, DATABASE_USERS, ctx.obj, FINALIZER, field_manager=FIELD_MANAGER
        )


class PasswordStep:
    """Reads the password from the referenced Secret, through the informer cache."""

    name = "password"

    def __init__(self, secrets: Informer) -> None:
        self.secrets = secrets

    async def ensure(self, ctx: Context) -> None:
        namespace = ctx.user.metadata.namespace or ""
        ref = ctx.user.spec.password
        where = f"Secret {namespace}/{ref.name}"
        secret = self.secrets.get(ObjectKey(namespace, ref.name))
        if secret is None:
            raise ConditionError("SecretNotFound", f"{where} not found", retry=False)
        encoded = (secret.get("data") or {}).get(ref.key)
        if encoded is None:
            raise ConditionError("SecretKeyNotFound", f"{where} has no key {ref.key!r}", retry=False)
        try:
            password = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ConditionError(
                "PasswordInvalid", f"key {ref.key!r} of {where} is not UTF-8 text", retry=False
            ) from None
        if not password:
            raise ConditionError("PasswordEmpty", f"key {ref.key!r} of {where} is empty", retry=False)
        metadata = secret["metadata"]
        ctx.password = password
        ctx.secret = {
            "name": ref.name,
            "uid": metadata["uid"],
            "resourceVersion": metadata["resourceVersion"],
        }

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo."""


class AccountStep:
    """Creates the account, sets its password when the Secret changed, drops it on deletion."""

    name = "account"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.user.spec.host
        if ctx.password is None or ctx.secret is None:
            raise RuntimeError("the password step must run before the account step")
        try:
            if not await accounts.exists(self.db, user, host):
                await accounts.create(self.db, user, host, ctx.password)
                ctx.event("Normal", "AccountCreated", f"created account {ctx.account}")
            elif ctx.status.get("appliedSecret") != ctx.secret:
                await accounts.set_password(self.db, user, host, ctx.password)
                ctx.event(
                    "Normal",
                    "PasswordSet",
                    f"set the password of {ctx.account} from Secret {ctx.secret['name']} "
                    f"(resourceVersion {ctx.secret['resourceVersion']})",
                )
        except MySQLError as error:
            raise ConditionError(error.reason, f"{ctx.account}: {error}") from None
        ctx.status.update({"user": user, "host": host, "appliedSecret": ctx.secret})

    async def delete(self, ctx: Context) -> None:
        user, host = ctx.status.get("user"), ctx.status.get("host")
        if not user or not host:
            return  # this resource never applied an account: nothing of ours to drop
        try:
            await accounts.drop(self.db, user, host)
        except MySQLError as error:
            raise ConditionError(error.reason, f"cannot drop '{user}'@'{host}': {error}") from None
        ctx.event("Normal", "AccountDropped", f"dropped account '{user}'@'{host}'")


class DatabaseUserReconciler:
    """Runs the steps for one ``DatabaseUser`` key and reports the outcome as status and Events."""

    def __init__(
        self,
        kube: KubeClient,
        users: Informer,
        steps: list[Step],
        recorder: EventRecorder,
    ) -> None:
        self.kube = kube
        self.users = users
        self.steps = steps
        self.recorder = recorder

    async def __call__(self, key: ObjectKey) -> Result:
        cached = self.users.get(key)
        if cached is None:
            return Result()  # gone: nothing to do
        obj = copy.deepcopy(cached)
        try:
            user = DatabaseUser.model_validate(obj)
        except pydantic.ValidationError as error:
            # The CRD schema rejects what the models reject, so this is an old or foreign object.
            ctx = Context(obj=obj, user=_unparsed(), status=copy.deepcopy(obj.get("status") or {}))
            await self._report(ctx, ConditionError("InvalidSpec", _first_error(error), retry=False))
            return Result()
        ctx = Context(obj=obj, user=user, status=copy.deepcopy(obj.get("status") or {}))
        try:
            if obj["metadata"].get("deletionTimestamp"):
                await self._finalize(ctx)
            else:
                for step in self.steps:
                    await step.ensure(ctx)
                self._set_ready(ctx, "True", "AccountReady", f"account {ctx.account} matches the spec")
                await self._write(ctx)
        except ConditionError as error:
            await self._report(ctx, error)
            if error.retry:
                raise
        return Result()

    async def _finalize(self, ctx: Context) -> None:
        if FINALIZER not in (ctx.obj["metadata"].get("finalizers") or []):
            return
        for step in reversed(self.steps):
            await step.delete(ctx)
        await self._record_events(ctx)

    def _set_ready(self, ctx: Context, status: str, reason: str, message: str) -> None:
        previous = find_condition(ctx.status.get("conditions"), READY)
        conditions: list[dict[str, Any]] = ctx.status.setdefault("conditions", [])
        set_condition(conditions, READY, status, reason, message, ctx.obj["metadata"].get("generation"))
        ctx.status["observedGeneration"] = ctx.obj["metadata"].get("generation")
        became_ready = status == "True" and (previous is None or previous.get("status") != "True")
        if became_ready:
            ctx.event("Normal", "AccountReady", message)

    async def _report(self, ctx: Context, error: ConditionError) -> None:
        self._set_ready(ctx, "False", error.reason, error.message)
        ctx.event("Warning", error.reason, error.message)
        await self._write(ctx)

    async def _write(self, ctx: Context) -> None:
        updated = await update_status(
            self.kube, DATABASE_USERS, ctx.obj, ctx.status, field_manager=FIELD_MANAGER
        )
        if updated is not None:
            ctx.obj = updated
        await self._record_events(ctx)

    async def _record_events(self, ctx: Context) -> None:
        involved = {**ctx.obj, "apiVersion": API_VERSION, "kind": "DatabaseUser"}
        for type_, reason, message in ctx.events:
            await self.recorder.event(involved, type_, reason, message)
        ctx.events.clear()


def _unparsed() -> DatabaseUser:
    """A stand-in for an object the models reject: only its status is written, no step runs."""
    selector = SecretKeySelector.model_construct(name="", key="")
    return DatabaseUser.model_construct(spec=DatabaseUserSpec.model_construct(password=selector))


def _first_error(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    return f"{location}: {first['msg']}"
