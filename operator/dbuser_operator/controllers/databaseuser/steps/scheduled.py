"""Rotation of a generated password: on its period (spec.rotation.period) or when the rotate annotation
gets a new value. Recorded as an Event ``Rotated``; status.rotation has the times and the handled trigger.

The order is what makes it safe to crash anywhere, and what keeps every login working:

1. the new password goes into the owned Secret under a *pending* key (``dbuser-operator.pending``), with a
   random id of it (annotation ``…/pending-credential``): applications still read the current one;
2. MySQL gets it, marked with that id (:mod:`..mysql.dual_password`), with RETAIN CURRENT PASSWORD under
   DualPassword: both passwords log in now. The mark tells a retried pass that this is done already. On
   MariaDB the account gets it as a second entry (:mod:`..mysql.mariadb_dual_auth`), and its hash is
   the mark;
3. the Secret is promoted: the new password under the key, the pending one removed, the id kept as
   ``…/credential-id`` (so that the account step re-marks the account without retaining anything twice),
   with the trigger it handled and the time (``…/rotated-for``, ``…/rotated-at``: a lost status write
   never rotates twice);
4. later the discard step drops the old password, when nothing uses it any more.

A pass that finds a pending password resumes at step 2. Nothing is rotated while the account does not yet
have the current password of the Secret.
"""

from __future__ import annotations

import secrets as random
from datetime import datetime, timedelta
from typing import Any, Final

from dbuser_operator.api.duration import parse_duration
from dbuser_operator.api.v1alpha1 import GROUP, ROTATE_ANNOTATION, AppliedSecret, RotationStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets, decoded, encode
from dbuser_operator.controllers.databaseuser.steps.generated import generated_password_spec
from dbuser_operator.controllers.databaseuser.steps.ownership import record_own_fingerprint
from dbuser_operator.controllers.databaseuser.steps.rotation import (
    now,
    parse_time,
    rotation_spec,
    set_on_mariadb,
    strategy_for,
)
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.credentials.generate import generate_password
from dbuser_operator.mysql import accounts, authentication, dual_password
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.conditions import format_time

PENDING_KEY: Final = "dbuser-operator.pending"
PENDING_ANNOTATION: Final = f"{GROUP}/pending-credential"
CREDENTIAL_ID_ANNOTATION: Final = f"{GROUP}/credential-id"
ROTATED_FOR_ANNOTATION: Final = f"{GROUP}/rotated-for"
ROTATED_AT_ANNOTATION: Final = f"{GROUP}/rotated-at"


class ScheduledRotationStep:
    """Rotates a generated password when its period is over or the rotate annotation changed."""

    name = "rotation-schedule"
    after = ("password", "ownership")

    def __init__(self, secrets: OwnedSecrets) -> None:
        self.secrets = secrets

    async def ensure(self, ctx: Context) -> None:
        generated = generated_password_spec(ctx)
        if generated is None:
            self._ignore_trigger(ctx)
            return
        spec, name = generated
        secret = ctx.password_secret or self.secrets.cached(ctx, name)
        if secret is None:
            return
        annotations = secret["metadata"].get("annotations") or {}
        ctx.credential_id = annotations.get(CREDENTIAL_ID_ANNOTATION)
        trigger = (ctx.user.metadata.annotations or {}).get(ROTATE_ANNOTATION)
        handled = {annotations.get(ROTATED_FOR_ANNOTATION), (ctx.status.rotation or RotationStatus()).trigger}
        pending, nonce = decoded(secret, PENDING_KEY), annotations.get(PENDING_ANNOTATION)
        if pending is None or nonce is None:
            next_time = self._next_time(ctx, secret)
            asked = trigger is not None and trigger not in handled
            if not asked and (next_time is None or now() < next_time):
                self._status(ctx, trigger if trigger in handled else None, next_time)
                if next_time is not None:
                    ctx.requeue((next_time - now()).total_seconds())
                return
            if len(ctx.user.spec.account_hosts()) > 1:
                raise ConditionError(
                    "RotationUnsupported",
                    f"rotation of a generated password covers a user of one host for now, and spec.hosts "
                    f"names {len(ctx.user.spec.hosts)} more: leave them out to rotate, or use a Secret of "
                    "your own in spec.password (its changes reach every host)",
                    retry=False,
                )
            if not ctx.account_exists or ctx.status.applied_secret != ctx.secret:
                ctx.requeue(1.0)  # the account gets the Secret's current password first
                return
            nonce, pending = random.token_hex(12), generate_password(spec.length, spec.character_set)
            marks = {PENDING_ANNOTATION: nonce, ROTATED_FOR_ANNOTATION: trigger if asked else None}
            secret = await self.secrets.patch(
                secret, {"metadata": {"annotations": marks}, "data": encode({PENDING_KEY: pending})}
            )
        await self._apply(ctx, pending, nonce)
        rotated_for = (secret["metadata"].get("annotations") or {}).get(ROTATED_FOR_ANNOTATION)
        moment = now()
        promoted = await self.secrets.patch(
            secret,
            {
                "metadata": {
                    "annotations": {
                        PENDING_ANNOTATION: None,
                        CREDENTIAL_ID_ANNOTATION: nonce,
                        ROTATED_AT_ANNOTATION: format_time(moment),
                    }
                },
                "data": {**encode({spec.key: pending}), PENDING_KEY: None},
            },
        )
        metadata = promoted["metadata"]
        ctx.password_secret, ctx.credential_id, ctx.password = promoted, nonce, pending
        ctx.secret = AppliedSecret(
            name=name, uid=metadata["uid"], resource_version=metadata["resourceVersion"]
        )
        why = f"the {ROTATE_ANNOTATION} annotation ({rotated_for})" if rotated_for else "its rotation period"
        ctx.event("Normal", "Rotated", f"rotated the generated password of {ctx.account} for {why}")
        self._status(ctx, rotated_for or (trigger if trigger in handled else None), self._next(ctx, moment))
        if ctx.status.rotation is not None:
            ctx.status.rotation.last_rotation_time = format_time(moment)

    @staticmethod
    def _ignore_trigger(ctx: Context) -> None:
        """The rotate annotation on a user's own Secret: nothing to generate; said once per value."""
        trigger = (ctx.user.metadata.annotations or {}).get(ROTATE_ANNOTATION)
        rotation = ctx.status.rotation or RotationStatus()
        if trigger is None or trigger == rotation.trigger:
            return
        ctx.status.rotation = rotation.model_copy(update={"trigger": trigger})
        ctx.event(
            "Warning",
            "RotateIgnored",
            f"{ROTATE_ANNOTATION} rotates generated passwords only: this password comes from the user's "
            "Secret (change it there)",
        )

    async def _apply(self, ctx: Context, password: str, nonce: str) -> None:
        """Give the account the pending password, marked with its id (once: a retry finds the mark)."""
        db, user, host = ctx.server.db, ctx.user.effective_user(), ctx.host
        strategy = await strategy_for(ctx.server, ctx)
        try:
            server = await ctx.server.server()
            if dual_password.supports_dual_passwords(server):
                state = await dual_password.read_state(db, user, host)
                if state is None or state.credential != nonce:
                    retain = strategy == "DualPassword" and ctx.password_intact is True
                    await dual_password.set_password(
                        db, user, host, password, nonce, retain=retain, method=ctx.authentication
                    )
            elif strategy == "DualPassword":  # MariaDB: the current password kept as an older entry
                await set_on_mariadb(ctx, server, password, retain=ctx.password_intact is True)
            else:
                method = authentication.effective(ctx.authentication, server)
                await accounts.set_password(db, user, host, password, method)  # MariaDB: the hash
            own = await record_own_fingerprint(ctx, password)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.password_intact = own

    def _next_time(self, ctx: Context, secret: dict[str, Any]) -> datetime | None:
        """When the period says the password is due: its last rotation (or creation) plus the period."""
        annotations = secret["metadata"].get("annotations") or {}
        last = (
            parse_time(annotations.get(ROTATED_AT_ANNOTATION))
            or parse_time((ctx.status.rotation or RotationStatus()).last_rotation_time)
            or parse_time(secret["metadata"].get("creationTimestamp"))
        )
        return None if last is None else self._next(ctx, last)

    @staticmethod
    def _next(ctx: Context, last: datetime) -> datetime | None:
        period = rotation_spec(ctx).period
        return None if period is None else last + timedelta(seconds=parse_duration(period))

    @staticmethod
    def _status(ctx: Context, trigger: str | None, next_time: datetime | None) -> None:
        """Record the handled trigger and the next scheduled rotation (only what changed)."""
        rotation = ctx.status.rotation or RotationStatus()
        update: dict[str, Any] = {}
        if trigger is not None and rotation.trigger != trigger:
            update["trigger"] = trigger
        scheduled = format_time(next_time) if next_time is not None else None
        if rotation.next_rotation_time != scheduled:
            update["next_rotation_time"] = scheduled
        if update:
            ctx.status.rotation = rotation.model_copy(update=update)

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: the Secret goes with the generated-password step."""
