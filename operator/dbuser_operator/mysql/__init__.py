"""The MySQL layer, by concern: :mod:`.session` (talking to a server), :mod:`.accounts` (accounts and roles),
:mod:`.grants`, :mod:`.databases`, :mod:`.bookkeeping` (the operator's ledger and schema), with
:mod:`.identifiers` and :mod:`.errors` beneath them all. It knows nothing of Kubernetes; this module gathers
the names most callers want.
"""

from dbuser_operator.mysql.errors import (
    AccessDeniedError,
    AccountExistsError,
    AdminPrivilegeMissingError,
    DatabaseUnavailableError,
    InvalidAccountError,
    InvalidGrantError,
    InvalidNameError,
    InvalidOptionsError,
    InvalidPasswordError,
    MySQLError,
    PasswordRejectedError,
    ServerError,
    TableNotFoundError,
    TLSError,
    classify,
)
from dbuser_operator.mysql.identifiers import InvalidIdentifierError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

__all__ = [
    "AccessDeniedError",
    "AccountExistsError",
    "AdminPrivilegeMissingError",
    "ConnectionSettings",
    "Database",
    "DatabaseUnavailableError",
    "InvalidAccountError",
    "InvalidGrantError",
    "InvalidIdentifierError",
    "InvalidNameError",
    "InvalidOptionsError",
    "InvalidPasswordError",
    "MySQLError",
    "PasswordRejectedError",
    "ServerError",
    "ServerInfo",
    "Statement",
    "TLSError",
    "TableNotFoundError",
    "classify",
]
