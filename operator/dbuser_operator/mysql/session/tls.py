"""TLS to the server as MySQL clients know it: ``--ssl-mode`` and the client context each mode makes.

=================== ========================= ================== ================
mode                TLS                       certificate chain  host name
=================== ========================= ================== ================
``DISABLED``        never                     —                  —
``PREFERRED``       if the server offers it   not verified       not checked
``REQUIRED``        or fail                   not verified       not checked
``VERIFY_CA``       or fail                   verified           not checked
``VERIFY_IDENTITY`` or fail                   verified           checked
=================== ========================= ================== ================

Left to itself, aiomysql falls back to plain text when the server offers no TLS and then sends whatever
the server asks for, the password in clear text included (an auth switch to ``mysql_clear_password``),
and it claims TLS in that plain-text handshake, which MySQL refuses. :class:`_TLSNegotiatingConnection`
refuses a connection that requires TLS *before* it authenticates, and falls back cleanly otherwise.
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomysql
import aiomysql.connection
import pymysql
from pymysql.constants import CLIENT

CR_SSL_CONNECTION_ERROR = 2026


class SSLMode(enum.StrEnum):
    """The MySQL client's ``--ssl-mode`` values."""

    DISABLED = "DISABLED"
    PREFERRED = "PREFERRED"
    REQUIRED = "REQUIRED"
    VERIFY_CA = "VERIFY_CA"
    VERIFY_IDENTITY = "VERIFY_IDENTITY"

    @property
    def requires_tls(self) -> bool:
        """Whether a server without TLS is refused."""
        return self not in {SSLMode.DISABLED, SSLMode.PREFERRED}

    @property
    def verifies(self) -> bool:
        """Whether the server's certificate chain is verified."""
        return self in {SSLMode.VERIFY_CA, SSLMode.VERIFY_IDENTITY}


@dataclass(frozen=True)
class TLSOptions:
    """What the TLS settings say, before they become a mode; messages name settings by ``names``.

    ``mode`` None means "not set": VERIFY_IDENTITY when a file or ``required`` is given (what those meant
    before modes existed: the chain and host name verified, against ``ca`` or the system's CAs), else
    PREFERRED (the MySQL client's default).
    """

    mode: SSLMode | None
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    required: bool = False  # the older "refuse a server without TLS" switch
    server_name: str | None = None

    @property
    def effective_mode(self) -> SSLMode:
        """The mode in force."""
        if self.mode is not None:
            return self.mode
        legacy = self.required or any(f is not None for f in (self.ca, self.cert, self.key))
        return SSLMode.VERIFY_IDENTITY if legacy else SSLMode.PREFERRED

    def problems(self, names: dict[str, str]) -> list[str]:
        """Contradictions, one sentence each; ``names`` maps mode, ca, cert, key, required, server_name."""
        mode, found = self.effective_mode, []
        if (self.cert is None) != (self.key is None):
            found.append(f"{names['cert']} and {names['key']} go together: set both or neither")
        if mode is SSLMode.DISABLED:
            given = [names[n] for n in ("ca", "cert", "key") if getattr(self, n) is not None]
            if self.required:
                given.append(names["required"])
            if given:
                found.append(f"{names['mode']}=DISABLED uses no TLS, but {', '.join(given)} given")
        if mode is SSLMode.PREFERRED and self.required:
            found.append(
                f"{names['mode']}=PREFERRED accepts a server without TLS: {names['required']} refuses"
            )
        if mode is SSLMode.VERIFY_CA and self.ca is None:
            found.append(f"{names['mode']}=VERIFY_CA needs {names['ca']} (the CA to verify the server with)")
        if self.server_name is not None and mode is not SSLMode.VERIFY_IDENTITY:
            found.append(f"{names['server_name']} is checked only with {names['mode']}=VERIFY_IDENTITY")
        return found

    def hints(self, names: dict[str, str]) -> list[str]:
        """Settings that work but deserve a change, one sentence each."""
        found = []
        if self.required:
            modes = "REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
            found.append(f"{names['required']} is deprecated: set {names['mode']} ({modes})")
        elif self.mode is None and self.effective_mode is SSLMode.VERIFY_IDENTITY:
            found.append(f"no {names['mode']}: VERIFY_IDENTITY, as the TLS files imply; set it explicitly")
        if self.ca is not None and self.effective_mode in {SSLMode.PREFERRED, SSLMode.REQUIRED}:
            found.append(
                f"{names['ca']} is not used with {names['mode']}={self.effective_mode}: "
                "VERIFY_CA or VERIFY_IDENTITY verify the server with it"
            )
        return found

    def client_context(self) -> ssl.SSLContext | None:
        """The client context for the mode in force; None with DISABLED."""
        mode = self.effective_mode
        if mode is SSLMode.DISABLED:
            return None
        context = _ClientContext(ssl.PROTOCOL_TLS_CLIENT)
        context.required = mode.requires_tls
        if mode.verifies:
            context.verify_mode = ssl.CERT_REQUIRED
            if self.ca is not None:
                context.load_verify_locations(cafile=str(self.ca))
            else:
                context.load_default_certs(ssl.Purpose.SERVER_AUTH)
            context.check_hostname = mode is SSLMode.VERIFY_IDENTITY
            context.server_name = self.server_name
        else:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert is not None:
            context.load_cert_chain(str(self.cert), str(self.key) if self.key else None)
        return context


class _ClientContext(ssl.SSLContext):
    """A client context that knows whether TLS is required, and may check another name than the host."""

    required = False
    server_name: str | None = None

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        # asyncio passes the host connected to; the certificate may name the server otherwise.
        name = self.server_name or server_hostname
        return super().wrap_bio(incoming, outgoing, server_side, name, session)


class _TLSNegotiatingConnection(aiomysql.Connection):  # type: ignore[misc]  # aiomysql is untyped
    """Negotiates TLS as the modes say when the server offers none, before authenticating.

    A context that requires TLS: refused. Otherwise plain text, without the TLS capability aiomysql would
    still claim in its handshake response (MariaDB ignores it; MySQL refuses the login: "Bad handshake").
    """

    async def _request_authentication(self) -> None:
        if self._ssl_context is not None and not self.server_capabilities & CLIENT.SSL:
            if getattr(self._ssl_context, "required", False):
                raise pymysql.err.OperationalError(
                    CR_SSL_CONNECTION_ERROR, "TLS is required but the server does not offer it"
                )
            self.client_flag &= ~CLIENT.SSL
        await super()._request_authentication()


def negotiate_tls_like_mysql_clients() -> None:
    """Make aiomysql's connections negotiate TLS like the mysql client (:class:`_TLSNegotiatingConnection`).

    aiomysql's pool builds its connections through ``aiomysql.connection.Connection``: replaced by the
    subclass, which changes nothing for a server that offers TLS or a connection without a context.
    """
    module: Any = aiomysql.connection
    if module.Connection is not _TLSNegotiatingConnection:
        module.Connection = _TLSNegotiatingConnection
