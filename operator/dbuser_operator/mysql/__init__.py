"""The MySQL layer: accounts, grants, limits, ownership, identifier quoting, connections and errors.

It knows nothing of Kubernetes.
"""

from dbuser_operator.mysql.connection import ConnectionSettings, Database
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
from dbuser_operator.mysql.server import ServerInfo
from dbuser_operator.mysql.statement import Statement

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
