"""TLS identities: what an account must show over TLS beyond TLS itself (``REQUIRE X509 | ISSUER | SUBJECT |
CIPHER``).

Both servers keep it in four columns of ``mysql.user`` (a view over ``mysql.global_priv`` on MariaDB):
``ssl_type`` (``''`` none, ``ANY`` SSL, ``X509``, ``SPECIFIED``) and ``x509_issuer``, ``x509_subject``,
``ssl_cipher`` (blobs on MySQL, text on MariaDB). ``REQUIRE X509`` cannot be combined with the others (a
syntax error on both); ``ISSUER`` and ``SUBJECT`` require a client certificate by themselves, and so does
``CIPHER`` on MySQL (not on MariaDB). The server compares issuer and subject with OpenSSL's one-line form of
the certificate's names (``/C=SE/O=Example/CN=app``; bytes outside printable ASCII written ``\\xHH``), and the
cipher with the session's cipher name, exactly.

Issuer, subject and cipher are string literals of ``ALTER USER``: they travel as query parameters (escaped
by the driver for the session's ``sql_mode``), and are checked first: printable ASCII, bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, LiteralString

from dbuser_operator.mysql.errors import InvalidOptionsError

NAME_MAX_LENGTH: Final = 1024
"""The longest issuer or subject accepted (the servers' columns are blobs; certificates' names are short)."""

CIPHER_MAX_LENGTH: Final = 64

_NAME: Final = re.compile(r"/[ -~]*")  # OpenSSL's one-line form: "/" then printable ASCII
_CIPHER: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # TLS_AES_128_GCM_SHA256, ECDHE-RSA-AES256-SHA

# mysql.user.ssl_type
SSL_NONE: Final = ""
SSL_ANY: Final = "ANY"
SSL_X509: Final = "X509"
SSL_SPECIFIED: Final = "SPECIFIED"


@dataclass(frozen=True)
class TLSIdentity:
    """What a TLS connection of the account must show: any trusted client certificate (``x509``), or a
    certificate of this ``issuer`` and/or ``subject`` and/or this ``cipher`` ('' where none is required).

    The constructor accepts anything read from a server (a requirement made by hand is drift to compare,
    not an error); :meth:`checked` is what may be written.
    """

    x509: bool = False
    issuer: str = ""
    subject: str = ""
    cipher: str = ""

    @property
    def specified(self) -> bool:
        """Whether an issuer, subject or cipher is required (``ssl_type`` SPECIFIED)."""
        return bool(self.issuer or self.subject or self.cipher)

    def __bool__(self) -> bool:
        return self.x509 is True or self.specified

    def checked(self) -> TLSIdentity:
        """This identity, if it may be written: X509 alone, names and cipher of allowed characters
        (:class:`~.errors.InvalidOptionsError` otherwise, the value shown escaped and bounded)."""
        if type(self.x509) is not bool:
            raise InvalidOptionsError(f"x509 must be a boolean, not {self.x509!r}"[:200])
        if self.x509 and self.specified:
            raise InvalidOptionsError("REQUIRE X509 cannot be combined with an issuer, subject or cipher")
        for field, value in (("issuer", self.issuer), ("subject", self.subject)):
            _check(field, value, _NAME, NAME_MAX_LENGTH, "'/' then printable ASCII (OpenSSL's one-line form)")
        _check("cipher", self.cipher, _CIPHER, CIPHER_MAX_LENGTH, "a cipher name: letters, digits, '_', '-'")
        return self

    def require_clause(self) -> tuple[LiteralString, tuple[str, ...]]:
        """The ``REQUIRE`` clause's options, as template text with ``%s`` slots, and their parameters:
        ``("X509", ())``, ``("SUBJECT %s AND CIPHER %s", (subject, cipher))``. Empty for no identity."""
        self.checked()
        if self.x509:
            return "X509", ()
        parts: list[LiteralString] = []
        params: list[str] = []
        for keyword, value in (("ISSUER %s", self.issuer), ("SUBJECT %s", self.subject)):
            if value:
                parts.append(keyword)
                params.append(value)
        if self.cipher:
            parts.append("CIPHER %s")
            params.append(self.cipher)
        return " AND ".join(parts), tuple(params)

    @classmethod
    def from_row(cls, ssl_type: object, issuer: object, subject: object, cipher: object) -> TLSIdentity:
        """From ``mysql.user``'s ``ssl_type``, ``x509_issuer``, ``x509_subject``, ``ssl_cipher``."""
        kind = _text(ssl_type)
        if kind == SSL_X509:
            return cls(x509=True)
        if kind == SSL_SPECIFIED:
            return cls(issuer=_text(issuer), subject=_text(subject), cipher=_text(cipher))
        return cls()

    def describe(self) -> str:
        """For Events and messages: ``a client certificate``, ``subject '/CN=app', cipher 'X'``."""
        if self.x509:
            return "a client certificate"
        shown = [f"{name} {value!a}" for name, value in self._values() if value]
        return ", ".join(shown) or "nothing"

    def _values(self) -> tuple[tuple[str, str], ...]:
        return (("issuer", self.issuer), ("subject", self.subject), ("cipher", self.cipher))


def _check(field: str, value: object, allowed: re.Pattern[str], longest: int, rule: str) -> None:
    if not isinstance(value, str):
        raise InvalidOptionsError(f"{field} must be a string, not {type(value).__name__}")
    if not value:
        return
    if len(value) > longest:
        raise InvalidOptionsError(f"{field} has {len(value)} characters, at most {longest}")
    if allowed.fullmatch(value) is None:
        raise InvalidOptionsError(f"invalid {field} {value[:80]!a}: allowed is {rule}")


def _text(value: object) -> str:
    """A column's value as text: blobs (MySQL) decoded, NULL as ''."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)
