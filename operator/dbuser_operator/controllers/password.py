"""The password step: the account's password from the referenced Secret, read from the watch cache."""

from __future__ import annotations

import base64
import binascii

from dbuser_operator.api.v1alpha1 import AppliedSecret
from dbuser_operator.controllers.steps import ConditionError, Context
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


class PasswordStep:
    """Reads the password; a missing Secret, key or value waits for the Secret to change."""

    name = "password"

    def __init__(self, secrets: Informer) -> None:
        self.secrets = secrets

    async def ensure(self, ctx: Context) -> None:
        namespace = ctx.user.metadata.namespace or ""
        ref = ctx.user.spec.password
        if ref is None:
            return  # the plugin takes no password (the schema admits no other case)
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
        if "\x00" in password:
            raise ConditionError("PasswordInvalid", f"key {ref.key!r} of {where} contains a NUL", retry=False)
        metadata = secret["metadata"]
        ctx.password = password
        ctx.secret = AppliedSecret(
            name=ref.name, uid=metadata["uid"], resource_version=metadata["resourceVersion"]
        )

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo."""
