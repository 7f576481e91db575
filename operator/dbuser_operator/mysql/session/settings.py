"""How to reach a server as the operator's admin account: :class:`ConnectionSettings`."""

from __future__ import annotations

import ssl
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, FilePath, SecretStr, model_validator

from dbuser_operator.mysql.session.tls import SSLMode, TLSOptions


class ConnectionSettings(BaseModel):
    """How to reach the server as the operator's admin account. ``repr`` shows no password.

    TLS follows ``ssl_mode``, the MySQL client's ``--ssl-mode`` (see :mod:`.tls`). Unset, it is
    VERIFY_IDENTITY when any of ``ca_file``, ``cert_file``, ``key_file`` or ``tls_required`` is set (what
    those meant before modes existed), else PREFERRED. ``server_name`` is the name VERIFY_IDENTITY checks
    instead of ``host`` (when connecting by address).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)  # input: the password

    host: str = Field(min_length=1)
    port: int = Field(default=3306, ge=1, le=65535)
    user: str = Field(min_length=1)
    password: SecretStr
    connect_timeout: float = Field(default=5.0, gt=0, description="bound of a new connection, login included")
    read_timeout: float = Field(default=10.0, gt=0, description="bound of the wait for one answer")
    statement_timeout: float = Field(default=30.0, gt=0, description="bound of one call, connecting included")
    name: str | None = Field(default=None, description="the server, as messages name it (else host:port)")
    ssl_mode: SSLMode | None = None
    ca_file: FilePath | None = None
    cert_file: FilePath | None = None
    key_file: FilePath | None = None
    tls_required: bool = Field(default=False, description="deprecated: an ssl_mode that requires TLS")
    server_name: str | None = Field(default=None, min_length=1)
    pool_size: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _consistent_tls(self) -> Self:
        problems = self.tls_options.problems(_SETTING_NAMES)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def tls_options(self) -> TLSOptions:
        """The TLS settings, for :mod:`.tls`."""
        return TLSOptions(
            self.ssl_mode, self.ca_file, self.cert_file, self.key_file, self.tls_required, self.server_name
        )

    @property
    def mode(self) -> SSLMode:
        """The TLS mode in force."""
        return self.tls_options.effective_mode

    @property
    def tls(self) -> bool:
        """Whether connections try TLS."""
        return self.mode is not SSLMode.DISABLED

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client TLS context, or None without TLS."""
        return self.tls_options.client_context()


_SETTING_NAMES = {
    "mode": "ssl_mode",
    "ca": "ca_file",
    "cert": "cert_file",
    "key": "key_file",
    "required": "tls_required",
    "server_name": "server_name",
}
