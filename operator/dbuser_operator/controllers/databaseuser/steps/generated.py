"""The generated-password step: a password the operator makes once and keeps in a Secret it owns.

The Secret is created before the account, and the password step reads it like a user's Secret from then
on, so the password is generated exactly once: a pass that dies between creating the Secret and creating
the account (SIGKILL, a lost lease) is followed by one that finds the Secret (in the cache, or by the
``AlreadyExists`` answer when the cache lags) and uses the stored password. Only a rotation writes a new
one (:func:`write_generated_password`).
"""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1 import GeneratedPassword
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets, decoded, encode
from dbuser_operator.credentials.generate import generate_password

WHAT = "generated password"


def generated_password_spec(ctx: Context) -> tuple[GeneratedPassword, str] | None:
    """spec.generatedPassword and its Secret's name, if the password is generated."""
    spec = ctx.user.spec.generated_password
    if spec is None:
        return None
    return spec, spec.secret_name_for(ctx.user.metadata.name or "")


class GeneratedPasswordStep:
    """Creates the generated password's Secret if missing; refuses a Secret of that name it does not own."""

    name = "generated-password"

    def __init__(self, secrets: OwnedSecrets) -> None:
        self.secrets = secrets

    async def ensure(self, ctx: Context) -> None:
        generated = generated_password_spec(ctx)
        if generated is None:
            return
        spec, name = generated
        found = await self.secrets.current(ctx, name)  # never older than our own last write of it
        if found is not None:
            secret = await self.secrets.claim(ctx, found, WHAT)
            if secret is not self.secrets.cached(ctx, name) or decoded(secret, spec.key) is None:
                ctx.password_secret = await self._filled(secret, spec)
            return
        secret, created = await self.secrets.create(
            ctx, name, {spec.key: generate_password(spec.length, spec.character_set)}, WHAT
        )
        if created:
            ctx.event("Normal", "PasswordGenerated", f"generated a password into Secret {name}")
        ctx.password_secret = await self._filled(secret, spec)

    async def _filled(self, secret: dict[str, Any], spec: GeneratedPassword) -> dict[str, Any]:
        """``secret``, with a password under ``spec.key`` (an owned Secret missing it gets a new one)."""
        if decoded(secret, spec.key):
            return secret
        return await write_generated_password(
            self.secrets, secret, spec.key, generate_password(spec.length, spec.character_set)
        )

    async def delete(self, ctx: Context) -> None:
        generated = generated_password_spec(ctx)
        if generated is not None:
            await self.secrets.delete(ctx, generated[1])

    async def release(self, ctx: Context) -> None:
        generated = generated_password_spec(ctx)
        if generated is not None:
            await self.secrets.release(ctx, generated[1])


async def write_generated_password(
    secrets: OwnedSecrets, secret: dict[str, Any], key: str, password: str
) -> dict[str, Any]:
    """Store ``password`` under ``key`` of the owned ``secret`` (conditional on its resourceVersion: a
    Secret changed since it was read raises ``ConflictError``); the Secret as written. For rotation."""
    return await secrets.patch(secret, {"data": encode({key: password})})
