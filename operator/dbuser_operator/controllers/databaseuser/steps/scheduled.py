"""Rotation of a generated password: on its period (spec.rotation.period) or when the rotate annotation
gets a new value. Recorded as an Event ``Rotated``; status.rotation has the times and the handled trigger.

It runs once the accounts of every host are in line with the Secret's current password (after
:mod:`.hosts`), and the order is what makes it safe to crash anywhere, and what keeps every login working:

1. every account of the resource (each host of ``spec.host``/``spec.hosts``) gets the new password, marked
   with a random id of it (:mod:`..mysql.dual_password`), with RETAIN CURRENT PASSWORD under DualPassword:
   both passwords log in now. The mark tells a retried pass that an account has it already. On MariaDB an
   account gets it as a second entry (:mod:`..mysql.mariadb_dual_auth`), and its hash is the mark;
2. one write of the owned Secret: the new password under the key, the id as ``…/credential-id`` (the
   accounts' marker), with the trigger it handled and the time (``…/rotated-for``, ``…/rotated-at``: a
   lost status write never rotates twice; the credentials step then finds the accounts with the Secret's
   password already, and sets nothing);
3. the fingerprints of the new password are recorded, then the status, in the pass's one status write;
4. later the discard step drops the old password on every host, when nothing uses it any more.

A pass that dies between 1 and 2 leaves accounts with a password nobody knows, whose fingerprint was never
recorded: under DualPassword the Secret's password still logs in (it was retained), and the next pass sets
it back on those accounts as drift (never retaining the unknown one) and rotates again; under Immediate the
next pass restores it likewise. So the new password is never written to the Secret before every account
takes it, and no Secret write is spent on a pending copy. A pending password left in the Secret by an
earlier version of the operator (key ``dbuser-operator.pending``) is resumed and promoted.
"""

from __future__ import annotations

import secrets as random
from datetime import datetime, timedelta
from typing import Any, Final

from dbuser_operator.api.duration import parse_duration
from dbuser_operator.api.v1alpha1 import (
    GROUP,
    ROTATE_ANNOTATION,
    AppliedSecret,
    RotationStatus,
    RotationStrategy,
)
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets, decoded, encode
from dbuser_operator.controllers.databaseuser.steps.authentication import wanted_plugin
from dbuser_operator.controllers.databaseuser.steps.generated import generated_password_spec
from dbuser_operator.controllers.databaseuser.steps.ownership import FOREIGN_RETRY
from dbuser_operator.controllers.databaseuser.steps.rotation import (
    now,
    parse_time,
    rotation_spec,
    set_on_mariadb,
    strategy_for,
)
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.credentials.generate import generate_password
from dbuser_operator.mysql.accounts import account_lookup, accounts, authentication, dual_password
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import Flavour
from dbuser_operator.runtime.conditions import format_time

PENDING_KEY: Final = "dbuser-operator.pending"  # written by earlier versions: resumed, then removed
PENDING_ANNOTATION: Final = f"{GROUP}/pending-credential"
CREDENTIAL_ID_ANNOTATION: Final = f"{GROUP}/credential-id"  # the rotation that made the password
ROTATED_FOR_ANNOTATION: Final = f"{GROUP}/rotated-for"
ROTATED_AT_ANNOTATION: Final = f"{GROUP}/rotated-at"


class ScheduledRotationStep:
    """Rotates a generated password, on every host, when its period is over or the rotate annotation
    changed."""

    name = "rotation-schedule"
    after = ("password", "hosts")  # every account has the Secret's current password first

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
        trigger = (ctx.user.metadata.annotations or {}).get(ROTATE_ANNOTATION)
        handled = {annotations.get(ROTATED_FOR_ANNOTATION), (ctx.status.rotation or RotationStatus()).trigger}
        pending, nonce = decoded(secret, PENDING_KEY), annotations.get(PENDING_ANNOTATION)
        if pending is not None and nonce is not None:  # left by an earlier version: resumed
            rotated_for = annotations.get(ROTATED_FOR_ANNOTATION)
        else:
            next_time = self._next_time(ctx, secret)
            asked = trigger is not None and trigger not in handled
            if not asked and (next_time is None or now() < next_time):
                self._status(ctx, trigger if trigger in handled else None, next_time)
                if next_time is not None:
                    ctx.requeue((next_time - now()).total_seconds())
                return
            if not self._ready(ctx):
                ctx.requeue(1.0)  # every account gets the Secret's current password first
                return
            nonce, pending = random.token_hex(12), generate_password(spec.length, spec.character_set)
            rotated_for = trigger if asked else None
        strategy = await strategy_for(ctx.server, ctx)
        retained = await self._apply(ctx, strategy, pending, nonce)
        moment = now()
        promoted = await self.secrets.patch(
            secret,
            {
                "metadata": {
                    "annotations": {
                        PENDING_ANNOTATION: None,
                        CREDENTIAL_ID_ANNOTATION: nonce,
                        ROTATED_FOR_ANNOTATION: rotated_for,
                        ROTATED_AT_ANNOTATION: format_time(moment),
                    }
                },
                "data": {**encode({spec.key: pending}), PENDING_KEY: None},
            },
        )
        await self._record(ctx, pending)
        metadata = promoted["metadata"]
        ctx.password_secret, ctx.password = promoted, pending
        ctx.secret = AppliedSecret(
            name=name, uid=metadata["uid"], resource_version=metadata["resourceVersion"]
        )
        ctx.status.applied_secret = ctx.secret  # every account has it
        await self._rotated(ctx, strategy, retained, moment)
        why = f"the {ROTATE_ANNOTATION} annotation ({rotated_for})" if rotated_for else "its rotation period"
        kept = ", the previous one stays valid for now" if retained else ""
        ctx.event(
            "Normal", "Rotated", f"rotated the generated password of {self._accounts(ctx)} for {why}{kept}"
        )
        self._status(ctx, rotated_for or (trigger if trigger in handled else None), self._next(ctx, moment))

    @staticmethod
    def _ready(ctx: Context) -> bool:
        """Whether every account of the spec is held and has the Secret's current password."""
        held = {host.lower() for host in ctx.status.hosts or []}
        every = all(host.lower() in held for host in ctx.user.spec.account_hosts())
        return every and ctx.secret is not None and ctx.status.applied_secret == ctx.secret

    @staticmethod
    def _accounts(ctx: Context) -> str:
        user = ctx.user.mysql_name()
        return ", ".join(f"'{user}'@'{host}'" for host in ctx.user.spec.account_hosts())

    @staticmethod
    def _method(ctx: Context, flavour: Flavour) -> authentication.Method | None:
        plugin = wanted_plugin(ctx)
        return authentication.Method(plugin, flavour) if plugin is not None else None

    async def _apply(self, ctx: Context, strategy: RotationStrategy, password: str, nonce: str) -> bool:
        """Give every account the new password, marked with its id (an account with the mark has it: a
        retried pass); whether any keeps a previous password (retained). Only a password the operator set
        (its fingerprint matches) is retained: never one changed by hand, nor an unknown one a pass that
        died left behind."""
        db, schema, user = ctx.server.db, ctx.server.schema, ctx.user.mysql_name()
        retained = False
        try:
            server = await ctx.server.server()
            method = self._method(ctx, server.flavour)
            for host in ctx.user.spec.account_hosts():
                if strategy == "DualPassword" and server.flavour == "mariadb":  # a second entry
                    found = await account_lookup.lookup(db, schema, user, host, server)
                    kept = await set_on_mariadb(
                        ctx,
                        server,
                        password,
                        retain=found.password_intact is True,
                        host=host,
                        state=found.dual_auth,
                    )
                    retained = retained or kept
                    continue
                if not dual_password.supports_dual_passwords(server):
                    await accounts.set_password(
                        db, user, host, password, authentication.effective(method, server)
                    )
                    continue
                found = await account_lookup.lookup(db, schema, user, host, server)
                state = found.password_state  # the marker and a retained password, with the fingerprint
                if state is None or state.credential != nonce:
                    retain = strategy == "DualPassword" and found.password_intact is True
                    await dual_password.set_password(
                        db, user, host, password, nonce, retain=retain, method=method
                    )
                    ctx.server.known.remember(user, host, nonce, password)
                    retained = retained or retain
                retained = retained or (state is not None and state.retained)
        except MySQLError as error:
            raise mysql_condition(error, self._accounts(ctx)) from None
        return retained

    async def _record(self, ctx: Context, password: str) -> None:
        """Record the new password's fingerprint on every account (after the Secret has it: see above)."""
        db, schema, user = ctx.server.db, ctx.server.schema, ctx.user.mysql_name()
        try:
            server = await ctx.server.server()
            method = self._method(ctx, server.flavour)
            for host in ctx.user.spec.account_hosts():
                if not await ownership.record_fingerprint(
                    db, schema, user, host, server, password=password, method=method
                ):
                    ctx.requeue(FOREIGN_RETRY)  # changed by hand meanwhile: restored as drift
        except MySQLError as error:
            raise mysql_condition(error, self._accounts(ctx)) from None

    @staticmethod
    async def _rotated(ctx: Context, strategy: RotationStrategy, retained: bool, moment: datetime) -> None:
        """status.rotation after the rotation: Retained (the discard step counts from now) or not."""
        watermark = await dual_password.session_watermark(ctx.server.db) if retained else None
        since = format_time(moment) if retained else None
        ctx.status.rotation = (ctx.status.rotation or RotationStatus()).model_copy(
            update={
                "strategy": strategy,
                "phase": "Retained" if retained else None,
                "last_rotation_time": format_time(moment),
                "retained_since": since,
                "session_watermark": watermark,
            }
        )

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
