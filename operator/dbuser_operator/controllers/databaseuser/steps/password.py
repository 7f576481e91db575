"""The password step: the account's password from the referenced Secret, read from the watch cache (or
as the generated-password step just wrote it). A generated password's Secret is read like a user's.

A password longer than the server's plugin takes is refused here, before any statement (``PasswordTooLong``,
naming the limit): MySQL would answer it with error 1396, the code of an account that exists.
"""

from __future__ import annotations

import base64
import binascii

from dbuser_operator.api.v1alpha1 import AppliedSecret, DatabaseUser, SecretKeySelector
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.mysql.accounts.passwords import check_length
from dbuser_operator.mysql.errors import MySQLError, PasswordLengthError
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


def password_selector(user: DatabaseUser) -> SecretKeySelector:
    """The Secret key the password is read from: spec.password, or the generated password's Secret."""
    if user.spec.password is not None:
        return user.spec.password
    generated = user.spec.generated_password
    if generated is None:
        raise ValueError("a DatabaseUser has spec.password or spec.generatedPassword")
    return SecretKeySelector(name=generated.secret_name_for(user.metadata.name or ""), key=generated.key)


class PasswordStep:
    """Reads the password; a missing Secret, key or value waits for the Secret to change."""

    name = "password"
    after = ("generated-password",)  # which writes the Secret it reads

    def __init__(self, secrets: Informer) -> None:
        self.secrets = secrets

    async def ensure(self, ctx: Context) -> None:
        namespace = ctx.user.metadata.namespace or ""
        spec = ctx.user.spec
        if spec.password is None and spec.generated_password is None:
            return  # the plugin takes no password (the schema admits no other case)
        ref = password_selector(ctx.user)
        where = f"Secret {namespace}/{ref.name}"
        secret = ctx.password_secret or self.secrets.get(ObjectKey(namespace, ref.name))
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
        if "\x00" in password:
            raise ConditionError("PasswordInvalid", f"key {ref.key!r} of {where} contains a NUL", retry=False)
        await self._check_length(ctx, password, f"key {ref.key!r} of {where}")
        metadata = secret["metadata"]
        ctx.password = password
        ctx.secret = AppliedSecret(
            name=ref.name, uid=metadata["uid"], resource_version=metadata["resourceVersion"]
        )

    async def _check_length(self, ctx: Context, password: str, what: str) -> None:
        """PasswordTooLong (not retried: the Secret must change) when the spec's plugin, or the server's
        default, takes fewer bytes."""
        spec = ctx.user.spec.authentication
        try:
            server = await ctx.server.server()
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        try:
            check_length(password, server.flavour, spec.plugin if spec is not None else None)
        except PasswordLengthError as error:
            raise ConditionError("PasswordTooLong", f"{what}: {error}", retry=False) from None

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo."""
