"""Password rotation: Immediate, or DualPassword (the old password kept valid until it is safe to drop).

A password change — the user edited their Secret, or a generated password was rotated — goes through
:func:`set_password`. With DualPassword (MySQL 8.0.21+) it is ``ALTER USER … RETAIN CURRENT PASSWORD``
marked with the Secret version it applies (see :mod:`..mysql.dual_password`): status.rotation becomes
``Retained``. The :class:`DiscardStep` drops the old password (``DISCARD OLD PASSWORD``, phase
``Discarded``) once the grace period is over and, with ``waitForConsumers``, every pod of the namespace that
uses the Secret started after the rotation and no session of the account from before it is open — or, past
``maxWait``, anyway, with a Warning Event naming what still held on. Waiting is a requeue, never a loop.

Crash safety: the marker tells whether the Secret version is already the account's primary password, so a
retried pass never retains twice; status lost in a crash is rebuilt from the account (a retained secondary
password means ``Retained``, counted from the pass that finds it).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from dbuser_operator.api.duration import parse_duration
from dbuser_operator.api.v1alpha1 import AppliedSecret, Rotation, RotationStatus, RotationStrategy
from dbuser_operator.controllers.databaseuser.compliance_facts import RETAINED_HOLDERS
from dbuser_operator.controllers.databaseuser.consumers import consumed_secrets, holding_pods
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.authentication import wanted_plugin
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.ownership import owner_of
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.accounts import (
    accounts,
    authentication,
    dual_password,
    hashed_password,
    mariadb_dual_auth,
    password_hashes,
    password_match,
)
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.runtime.resources import Resource

PODS: Final = Resource("", "v1", "pods", "Pod")
POLL_INTERVAL: Final = 5.0  # seconds between looks at pods and sessions while a discard waits
NAMED_MAX: Final = 10  # pods named in an Event at most


def rotation_spec(ctx: Context) -> Rotation:
    """spec.rotation with its defaults."""
    return ctx.user.spec.rotation or Rotation()


async def strategy_for(handle: ServerHandle, ctx: Context) -> RotationStrategy:
    """The strategy in force: the spec's, else DualPassword where the server supports it, else Immediate.

    DualPassword asked of a server without dual passwords is refused (DualPasswordUnsupported), never
    downgraded.
    """
    asked = rotation_spec(ctx).strategy
    plugin = wanted_plugin(ctx)  # the spec's (this step runs before the plugin's own)
    try:
        server = await handle.server()
        method = authentication.Method(plugin, server.flavour) if plugin is not None else None
    except MySQLError as error:
        raise mysql_condition(error, ctx.account) from None
    lacking = dual_passwords_lacking(server, method)
    if asked == "DualPassword" and lacking:
        raise ConditionError(
            "DualPasswordUnsupported",
            f"spec.rotation.strategy DualPassword {lacking}: set strategy Immediate (the old password stops "
            "working at once on every change)",
            retry=False,
        )
    return asked or ("Immediate" if lacking else "DualPassword")


def dual_passwords_lacking(server: ServerInfo, method: authentication.Method | None) -> str:
    """Why ``server`` cannot keep two passwords of an account of ``method`` (spec.authentication; None: the
    server's default plugin) ("" when it can): MySQL 8.0.21+ retains one; MariaDB 10.11+ holds two
    ``mysql_native_password`` entries."""
    if dual_password.supports_dual_passwords(server):
        return ""
    if not mariadb_dual_auth.supports_dual_auth(server):
        return f"needs dual passwords (MySQL 8.0.21 or later, MariaDB 10.11 or later); {server} has none"
    method = authentication.effective(method, server)
    if method is None:
        return f"on {server} needs mysql_native_password's hash: the server stores another (old_passwords on)"
    if method.plugin == password_hashes.ED25519:
        return (
            f"on {server} needs mysql_native_password: a login through a second ed25519 authentication "
            "takes a second plugin switch, which common clients refuse (PyMySQL, Go's go-sql-driver/mysql)"
        )
    if method.plugin != mariadb_dual_auth.PLUGIN:
        return f"on {server} needs mysql_native_password, not {method.plugin}"
    return ""


class StrategyStep:
    """Refuses a strategy the server cannot do before anything else touches MySQL."""

    name = "rotation-strategy"

    async def ensure(self, ctx: Context) -> None:
        await strategy_for(ctx.server, ctx)

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo."""


def now() -> datetime:
    """The current time (UTC)."""
    return datetime.now(UTC)


def credential_version(secret: AppliedSecret) -> str:
    """The marker of a Secret version in the account (uid and resourceVersion: no secret)."""
    return f"{secret.uid}/{secret.resource_version}"


async def set_password(
    handle: ServerHandle, ctx: Context, password: str, secret: AppliedSecret, *, restore: bool
) -> None:
    """Apply ``password`` (from ``secret``) to the account with the strategy in force; ``restore``: put back
    a password somebody changed by hand. Only a current password the operator set itself (its fingerprint
    matches) is retained: never one changed by hand, nor the password of an account being adopted."""
    strategy = await strategy_for(handle, ctx)
    db, user, host = handle.db, ctx.user.mysql_name(), ctx.host
    previous = ctx.status.rotation or RotationStatus()
    moment = format_time(now())
    if strategy == "Immediate":
        server = await handle.server()
        method = authentication.effective(ctx.authentication, server)
        if dual_password.supports_dual_passwords(server):
            version = credential_version(secret)
            hashed = await _hashed(handle, ctx, password, method)
            await dual_password.set_password(
                db, user, host, password, version, retain=False, method=method, hashed=hashed
            )
            await _fingerprint_set(handle, ctx, hashed)
            handle.known.remember(user, host, version, password)
            if ctx.password_state is None or ctx.password_state.retained:  # one from before the switch
                await dual_password.discard_old_password(db, user, host)
        else:
            await accounts.set_password(db, user, host, password, method)  # MariaDB: the hash
        if restore:
            return  # drift repaired: no rotation
        ctx.status.rotation = previous.model_copy(
            update={"strategy": strategy, "last_rotation_time": moment, "phase": None, "retained_since": None}
        )
        ctx.status.rotation.session_watermark = None
        return
    server = await handle.server()
    if server.flavour == "mariadb":
        retained = await set_on_mariadb(
            ctx, server, password, retain=not restore and ctx.password_intact is True
        )
        if not retained:
            return
        await _record_retained(handle, ctx, previous, moment, restore=restore)
        return
    version = credential_version(secret)
    state = ctx.password_state  # as the pass's look found it
    if state is None:
        state = await dual_password.read_state(db, user, host)
    if state is not None and state.credential == version and not restore:
        # A retried pass: this Secret version is the primary password already (its status was lost).
        retained = state.retained
    elif state is not None and not restore and await _holds(handle, ctx, password):
        # The account has it already (a generated rotation set it, or a pass died before its record):
        # mark it with the Secret version, retain nothing.
        hashed = await _hashed(handle, ctx, password, ctx.authentication)
        await dual_password.set_password(
            db, user, host, password, version, retain=False, method=ctx.authentication, hashed=hashed
        )
        await _fingerprint_set(handle, ctx, hashed)
        retained = state.retained
    else:
        # Only a password the operator set is kept valid: not one changed by hand, nor an adopted one.
        retain = not restore and ctx.password_intact is True
        hashed = await _hashed(handle, ctx, password, ctx.authentication)
        await dual_password.set_password(
            db, user, host, password, version, retain=retain, method=ctx.authentication, hashed=hashed
        )
        await _fingerprint_set(handle, ctx, hashed)
        retained = retain or (state is not None and state.retained)
    handle.known.remember(user, host, version, password)
    if not retained:
        return
    await _record_retained(handle, ctx, previous, moment, restore=restore)


async def _hashed(
    handle: ServerHandle, ctx: Context, password: str, method: authentication.Method | None
) -> dual_password.Hashed | None:
    """The password as the string the account will store, with its fingerprint for this resource, where
    it can be set so (:mod:`~dbuser_operator.mysql.accounts.hashed_password`: MySQL, the server checks no
    password of its own); None: ``IDENTIFIED BY``, and the fingerprint recorded in the row after it."""
    server = await handle.server()
    plugin = hashed_password.plugin_of(method, ctx.plugin)
    if plugin is None or not hashed_password.applies(server, plugin):
        return None
    if await hashed_password.server_checks_passwords(handle.db, ctx.own_reuse_policy):
        return None
    if handle.digest_rounds is None:
        handle.digest_rounds = await hashed_password.digest_rounds(handle.db, server)
    return hashed_password.hashed(plugin, password, handle.digest_rounds, owner_of(ctx.obj).uid)


async def _fingerprint_set(handle: ServerHandle, ctx: Context, hashed: dual_password.Hashed | None) -> None:
    """After a password set with its fingerprint (``hashed``): nothing left to record but, once, the row's
    fingerprint cleared (it would win over the attribute's)."""
    if hashed is None:
        return
    ctx.fingerprint_set = True
    if ctx.fingerprint_in_row:
        await hashed_password.clear_row_fingerprint(handle.db, handle.schema, ctx.user.mysql_name(), ctx.host)
        ctx.fingerprint_in_row = False


async def _holds(handle: ServerHandle, ctx: Context, password: str) -> bool:
    """Whether the account's primary password is ``password``: as this pass found already, else asked of
    the account's own hash (:mod:`~dbuser_operator.mysql.accounts.password_match`)."""
    if ctx.password_held is not None:
        return ctx.password_held
    user, server = ctx.user.mysql_name(), await handle.server()
    return await password_match.holds_password(handle.db, user, ctx.host, server, password)


async def set_on_mariadb(
    ctx: Context,
    server: ServerInfo,
    password: str,
    *,
    retain: bool,
    keep_older: bool = False,
    host: str | None = None,
    state: mariadb_dual_auth.DualAuthState | None = None,
) -> bool:
    """MariaDB: ``password`` becomes the current entry of the account (of ``host``, else the pass's), the
    current one kept next to it with ``retain``, the older one with ``keep_older``
    (:mod:`..mysql.mariadb_dual_auth`); whether an older password still logs in. A password already
    current is not set again: a retried pass retains nothing twice. ``state``: the account's
    authentications as a look of this pass read them (else the pass's own look's, or read now)."""
    db, user = ctx.server.db, ctx.user.mysql_name()
    if host is None:
        host, state = ctx.host, ctx.dual_auth
    method = authentication.effective(ctx.authentication, server)
    if method is None:  # refused by strategy_for before: MariaDB's default plugin without its hash
        raise ConditionError("DualPasswordUnsupported", dual_passwords_lacking(server, None), retry=False)
    if state is None:
        state = await mariadb_dual_auth.read_state(db, user, host)
    if state is not None and state.holds(method, password):
        return state.retained
    return await mariadb_dual_auth.set_password(
        db, user, host, password, method, state=state, retain=retain, keep_older=keep_older
    )


async def _record_retained(
    handle: ServerHandle, ctx: Context, previous: RotationStatus, moment: str, *, restore: bool
) -> None:
    """status.rotation of a password retained now (Retained, the time, the session watermark), and its
    Event; a restore within a rotation keeps that rotation's clock."""
    if restore and previous.phase == "Retained":
        return  # still the same rotation: its clock keeps running
    await mark_retained(handle, ctx, "DualPassword")


async def mark_retained(handle: ServerHandle, ctx: Context, strategy: RotationStrategy) -> None:
    """status.rotation: the previous password retained as of now (the discard step counts from here)."""
    moment = format_time(now())
    watermark = await dual_password.session_watermark(handle.db)
    ctx.status.rotation = (ctx.status.rotation or RotationStatus()).model_copy(
        update={
            "strategy": strategy,
            "phase": "Retained",
            "last_rotation_time": moment,
            "retained_since": moment,
            "session_watermark": watermark,
        }
    )
    ctx.event("Normal", "PasswordRetained", f"the previous password of {ctx.account} stays valid for now")


async def resume(handle: ServerHandle, ctx: Context) -> None:
    """A Secret version whose password the account has already: no rotation. Only a retained password
    that status does not know of (a pass that set it died before its status write) is recorded, so that
    the discard step drops it in time."""
    if (ctx.status.rotation or RotationStatus()).phase == "Retained":
        return
    strategy = await strategy_for(handle, ctx)
    if strategy != "DualPassword":
        return
    user, server = ctx.user.mysql_name(), await handle.server()
    if server.flavour == "mariadb":
        entries = await mariadb_dual_auth.read_state(handle.db, user, ctx.host)
        retained = entries is not None and entries.retained
    else:
        state = await dual_password.read_state(handle.db, user, ctx.host)
        retained = state is not None and state.retained
    if retained:
        await mark_retained(handle, ctx, strategy)


class DiscardStep:
    """Discards a retained password once nothing needs it any more (or past the maximum wait)."""

    name = "rotation-discard"
    after = ("connection-secret",)  # the connection Secret has the new password first

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def ensure(self, ctx: Context) -> None:
        rotation = ctx.status.rotation
        if rotation is None or rotation.phase != "Retained":
            return
        spec = rotation_spec(ctx)
        since = retained_at(rotation.retained_since) or now()
        elapsed = (now() - since).total_seconds()
        grace, max_wait = parse_duration(spec.grace_period), parse_duration(spec.max_wait)
        forced = ""
        if await strategy_for(ctx.server, ctx) == "DualPassword":
            if elapsed < grace:
                ctx.requeue(grace - elapsed)
                return
            if spec.wait_for_consumers:
                holders = await self._holders(ctx, since, rotation.session_watermark, elapsed)
                if holders and elapsed < max_wait:
                    ctx.requeue(min(POLL_INTERVAL, max_wait - elapsed))
                    return
                forced = holders
        try:
            mariadb = (await ctx.server.server()).flavour == "mariadb"
            discard = (
                mariadb_dual_auth.discard_old_password if mariadb else dual_password.discard_old_password
            )
            for host in self._hosts(ctx):  # every account the resource holds
                await discard(ctx.server.db, ctx.user.mysql_name(), host)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.rotation = rotation.model_copy(update={"phase": "Discarded"})
        RETAINED_HOLDERS.forget(ctx.user.metadata.uid or "")
        if forced:
            ctx.event(
                "Warning",
                "OldPasswordDiscardedWhileInUse",
                f"discarded the previous password of {ctx.account} after the maximum wait "
                f"({spec.max_wait}) although {forced} still held on to it",
            )
        else:
            ctx.event("Normal", "OldPasswordDiscarded", f"discarded the previous password of {ctx.account}")

    async def _holders(self, ctx: Context, since: datetime, watermark: int | None, elapsed: float) -> str:
        """What still uses the old password, for people ("" when nothing): pods, sessions."""
        namespace = ctx.user.metadata.namespace or ""
        items, _ = await self.kube.list_all(PODS, namespace)
        pods = holding_pods(items, consumed_secrets(ctx.obj), since)
        parts = []
        if pods:
            more = f" and {len(pods) - NAMED_MAX} more" if len(pods) > NAMED_MAX else ""
            named = ", ".join(pods[:NAMED_MAX]) + more
            parts.append(f"{len(pods)} pod(s) started before the rotation ({named})")
        sessions = await self._old_sessions(ctx, watermark, elapsed)
        RETAINED_HOLDERS.record(ctx.user.metadata.uid or "", pods=bool(pods), sessions=bool(sessions))
        if sessions:
            parts.append(f"{sessions} session(s) of the account opened before the rotation")
        return " and ".join(parts)

    async def _old_sessions(self, ctx: Context, watermark: int | None, elapsed: float) -> int:
        if watermark is None:
            return 0
        try:
            found = await dual_password.sessions_up_to(
                ctx.server.db, ctx.user.mysql_name(), self._hosts(ctx), watermark
            )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        return 0 if found.uptime < elapsed else found.count  # restarted since: every session is newer

    @staticmethod
    def _hosts(ctx: Context) -> list[str]:
        return ctx.status.hosts or [ctx.host]

    async def delete(self, ctx: Context) -> None:
        """Dropping the account drops its passwords."""


def retained_at(value: str | None) -> datetime | None:
    """When the old password was retained, as late as ``retainedSince`` allows: status keeps whole seconds
    (``metav1.Time``), truncated, so the moment was up to a second after a value without a fraction. The
    grace period (and the pods and sessions that started before the rotation) count from the end of that
    second: the old password is never discarded before the grace period is over. None when absent."""
    since = parse_time(value)
    if since is None or since.microsecond:
        return since
    return since + timedelta(seconds=1)


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 time; None when absent or malformed."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
