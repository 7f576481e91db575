"""Distinguished names in the two forms that meet here: OpenSSL's one-line form, which MySQL compares, and
RFC 4514, which cert-manager takes.

MySQL and MariaDB compare ``REQUIRE ISSUER`` and ``SUBJECT`` with ``X509_NAME_oneline`` of the client
certificate's names, as text, exactly. With OpenSSL 3 (the library of every supported server) that form is:
each attribute in the certificate's order, written ``/<short name>=<value>`` (``+`` instead of ``/`` between
attributes of one multi-valued RDN); in a value, ``/`` and ``+`` are written ``\\/`` and ``\\+``, each byte
outside printable ASCII ``\\xHH`` (upper-case hex), and every other byte as it is, a backslash included.

cert-manager's ``literalSubject`` is an RFC 4514 string, parsed by go-ldap: attributes separated by commas,
values escaped as go-ldap's own encoder escapes them; cert-manager encodes the string's attributes in reverse
order (RFC 4514 writes the last RDN first), so a one-line subject's first attribute is the literal subject's
last. cert-manager knows C, O, OU, CN, SERIALNUMBER, L, ST, STREET, DC and UID by name, any other attribute by
its OID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

SHORT_NAMES: Final[dict[str, str]] = {
    "2.5.4.3": "CN",
    "2.5.4.4": "SN",
    "2.5.4.5": "serialNumber",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "street",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.12": "title",
    "2.5.4.13": "description",
    "2.5.4.15": "businessCategory",
    "2.5.4.17": "postalCode",
    "2.5.4.41": "name",
    "2.5.4.42": "GN",
    "2.5.4.43": "initials",
    "2.5.4.44": "generationQualifier",
    "2.5.4.46": "dnQualifier",
    "2.5.4.65": "pseudonym",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
    "1.2.840.113549.1.9.1": "emailAddress",
}
"""OpenSSL's short names of the attributes names commonly hold, by OID (it writes any other as its OID)."""

OIDS: Final = {short: oid for oid, short in SHORT_NAMES.items()}

LITERAL_TYPES: Final = {
    "C": "C",
    "O": "O",
    "OU": "OU",
    "CN": "CN",
    "serialNumber": "SERIALNUMBER",
    "L": "L",
    "ST": "ST",
    "street": "STREET",
    "DC": "DC",
    "UID": "UID",
}
"""The attributes cert-manager's literalSubject knows by name (one-line short name → its name there)."""

_OID: Final = re.compile(r"[0-2](\.(0|[1-9][0-9]*))+")
_HEX_ESCAPE: Final = re.compile(r"\\x([0-9A-F]{2})")


class NameFormError(ValueError):
    """A name that cannot be requested as written: why, for a condition's message."""


@dataclass(frozen=True)
class Attribute:
    """One attribute of a name: its OID and its value's bytes (as the certificate holds them)."""

    oid: str
    value: bytes

    @property
    def short_name(self) -> str:
        """How OpenSSL names the attribute: its short name, else its OID."""
        return SHORT_NAMES.get(self.oid, self.oid)


def render_value(value: bytes) -> str:
    """A value as ``X509_NAME_oneline`` of OpenSSL 3 writes it."""
    out = []
    for byte in value:
        if byte in b"/+":
            out.append("\\" + chr(byte))
        elif 0x20 <= byte <= 0x7E:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02X}")
    return "".join(out)


def render(rdns: list[list[Attribute]]) -> str:
    """A name (its RDNs in the certificate's order, each a list of attributes) in the one-line form."""
    return "".join(
        ("/" if index == 0 else "+") + f"{attribute.short_name}={render_value(attribute.value)}"
        for rdn in rdns
        for index, attribute in enumerate(rdn)
    )


def parse(text: str) -> list[Attribute]:
    """The attributes of a one-line name of single-valued RDNs, in order; :class:`NameFormError` for a
    text that no certificate's name is written as (then it would never match), for a multi-valued RDN, and
    for an attribute OpenSSL does not name as written."""
    if not text.isascii() or not text.isprintable():
        raise NameFormError("only printable ASCII: write any other byte \\xHH, as OpenSSL does")
    if not text.startswith("/"):
        raise NameFormError(f"{text[:80]!a} does not start with '/' (OpenSSL's one-line form: /O=x/CN=y)")
    entries: list[str] = []
    current: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] in ("/", "+"):
            current.append(text[index : index + 2])
            index += 2
            continue
        if char == "+":
            raise NameFormError(
                "an unescaped '+' joins attributes into one multi-valued RDN, which cannot be requested; "
                "a '+' inside a value is written '\\+'"
            )
        if char == "/":
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    entries.append("".join(current))
    attributes = [_attribute(entry) for entry in entries]
    written = render([[attribute] for attribute in attributes])
    if written != text:
        raise NameFormError(f"{text[:80]!a} is written {written[:80]!a} by OpenSSL: use that form")
    return attributes


def _attribute(entry: str) -> Attribute:
    kind, equals, value = entry.partition("=")
    if not equals:
        raise NameFormError(f"{entry[:40]!a} is no attribute: <name>=<value>, e.g. CN=app")
    oid = OIDS.get(kind) or (kind if _OID.fullmatch(kind) else None)
    if oid is None:
        known = ", ".join(SHORT_NAMES.values())
        raise NameFormError(f"unknown attribute {kind[:20]!a}: one of {known}, or an OID")
    if not value:
        raise NameFormError(f"{kind} has an empty value")
    return Attribute(oid, _value_bytes(value))


def _value_bytes(value: str) -> bytes:
    """A value's bytes: ``\\/`` and ``\\+`` their character, ``\\xHH`` of a byte outside printable ASCII
    that byte, anything else itself (OpenSSL writes a printable byte as it is, never as ``\\xHH``)."""
    value = value.replace("\\/", "/").replace("\\+", "+")

    def byte(match: re.Match[str]) -> str:
        code = int(match.group(1), 16)
        return chr(code) if code < 0x20 or code > 0x7E else match.group(0)

    return _HEX_ESCAPE.sub(byte, value).encode("latin-1")


def literal_subject(attributes: list[Attribute]) -> str:
    """The RFC 4514 string cert-manager encodes as a name of these attributes, in this order (a one-line
    subject's order); :class:`NameFormError` for a value that is not UTF-8 text (cert-manager takes text)."""
    parts = []
    for attribute in reversed(attributes):
        try:
            text = attribute.value.decode("utf-8")
        except UnicodeDecodeError:
            raise NameFormError(
                f"{attribute.short_name}: its bytes are not UTF-8 text, and cert-manager requests text"
            ) from None
        kind = LITERAL_TYPES.get(attribute.short_name, attribute.oid)
        parts.append(f"{kind}={_escape(text)}")
    return ",".join(parts)


def _escape(value: str) -> str:
    """A value escaped as go-ldap's encoder escapes one (its parser is the exact inverse): a leading space
    or '#' and a trailing space, ``" + , ; < > \\`` with a backslash, every byte outside printable ASCII
    as ``\\hh``."""
    raw = value.encode("utf-8")
    out = []
    for index, byte in enumerate(raw):
        char = chr(byte)
        edge = (index == 0 and char in " #") or (index == len(raw) - 1 and char == " ")
        if edge or char in '"+,;<>\\':
            out.append("\\" + char)
        elif byte < 0x20 or byte > 0x7E:
            out.append(f"\\{byte:02x}")
        else:
            out.append(char)
    return "".join(out)
