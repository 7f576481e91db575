"""The servers' own password hashes, computed or checked on the client.

- ``mysql_native_password`` (both flavours): ``*`` and the upper-case hex of ``SHA1(SHA1(password))``,
  unsalted: the server stores what :func:`native_hash` computes, so it can be sent instead of the password
  (``IDENTIFIED BY PASSWORD '<hash>'``).
- MariaDB's ``ed25519``: the Ed25519 public key of the password (SHA-512 of it, the first 32 bytes clamped
  as a scalar, times the base point), base64 without padding: unsalted too (:func:`ed25519_hash`).
- MySQL's ``caching_sha2_password``: ``$A$`` + the rounds in thousands (three hex digits) + ``$`` + a
  20-byte salt of the server's choosing + 43 characters of SHA-256 crypt. It cannot be computed
  beforehand, only checked against a password once stored (:func:`caching_sha2_matches`).

These hashes are the servers' formats, some of them weak: they are computed here only to send or to
compare, never to protect anything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Final

from nacl.bindings import crypto_scalarmult_ed25519_base

NATIVE: Final = "mysql_native_password"
ED25519: Final = "ed25519"
CACHING_SHA2: Final = "caching_sha2_password"

_CRYPT64: Final = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# The byte triples of the 32-byte digest, in SHA-256 crypt's order; the last two bytes make 3 characters.
_ORDER: Final = ((0, 10, 20), (21, 1, 11), (12, 22, 2), (3, 13, 23), (24, 4, 14))
_ORDER_REST: Final = ((15, 25, 5), (6, 16, 26), (27, 7, 17), (18, 28, 8), (9, 19, 29))
_CACHING_SHA2_PREFIX: Final = b"$A$"
_SALT_LENGTH: Final = 20
_DIGEST_LENGTH: Final = 43
_CYCLE: Final = 42  # 2 * 3 * 7: the rounds' pattern


_SHA1: Final = hashlib.sha1(usedforsecurity=False)  # copied, not made anew: OpenSSL 3 looks it up each time


def native_hash(password: str) -> str:
    """``mysql_native_password``'s hash, as ``PASSWORD(password)`` gives it (``''`` for ``''``)."""
    if not password:
        return ""
    inner, outer = _SHA1.copy(), _SHA1.copy()
    inner.update(password.encode())
    outer.update(inner.digest())
    return "*" + outer.hexdigest().upper()


def ed25519_hash(password: str) -> str:
    """MariaDB's ``ed25519`` authentication string of ``password`` (its public key, base64 unpadded)."""
    scalar = hashlib.sha512(password.encode()).digest()[:32]  # clamped by the scalar multiplication
    return base64.b64encode(crypto_scalarmult_ed25519_base(scalar)).decode("ascii").rstrip("=")


def sha256_crypt(password: bytes, salt: bytes, rounds: int) -> str:
    """The 43 characters of SHA-256 crypt (Drepper's algorithm) of ``password`` with ``salt``, as MySQL
    computes them (its salts are 20 bytes, not crypt's 16 characters at most)."""
    digest_b = hashlib.sha256(password + salt + password).digest()
    context = hashlib.sha256(password + salt)
    context.update(_repeat(digest_b, len(password)))
    length = len(password)
    while length:
        context.update(digest_b if length & 1 else password)
        length >>= 1
    digest_a = context.digest()
    p_bytes = _repeat(hashlib.sha256(password * len(password)).digest(), len(password))
    s_bytes = _repeat(hashlib.sha256(salt * (16 + digest_a[0])).digest(), len(salt))
    # Round r hashes (P if r is odd, else C) + (S if r % 3) + (P if r % 7) + (C if r is odd, else P), C the
    # previous digest: what goes around C repeats every 42 rounds, so it is joined once (half the time).
    around = [_around(r, p_bytes, s_bytes) for r in range(_CYCLE)]
    current, sha256 = digest_a, hashlib.sha256
    for round_ in range(rounds):
        before, after = around[round_ % _CYCLE]
        current = sha256(before + current + after).digest()
    encoded = [_crypt64(current[a], current[b], current[c], 4) for a, b, c in (*_ORDER, *_ORDER_REST)]
    return "".join(encoded) + _crypt64(0, current[31], current[30], 3)


def caching_sha2_string(password: str, rounds: int) -> str:
    """A ``caching_sha2_password`` authentication string of ``password`` with a fresh random salt (of crypt's
    alphabet: never the ``$`` or NUL a server's own salts avoid too), as the server would store it with
    ``rounds`` (a multiple of 1000)."""
    if rounds <= 0 or rounds % 1000 or rounds // 1000 > 0xFFF:
        raise ValueError(f"caching_sha2_password rounds must be a multiple of 1000, not {rounds}")
    salt = "".join(secrets.choice(_CRYPT64) for _ in range(_SALT_LENGTH))
    digest = sha256_crypt(password.encode(), salt.encode("ascii"), rounds)
    return f"$A${rounds // 1000:03X}${salt}{digest}"


def caching_sha2_matches(auth_string: str | bytes, password: str) -> bool:
    """Whether a ``caching_sha2_password`` authentication string is ``password``'s (False for a string of
    another format)."""
    stored = auth_string.encode("utf-8", "surrogateescape") if isinstance(auth_string, str) else auth_string
    header = len(_CACHING_SHA2_PREFIX) + 4  # "$A$" "005" "$"
    if len(stored) != header + _SALT_LENGTH + _DIGEST_LENGTH or not stored.startswith(_CACHING_SHA2_PREFIX):
        return False
    rounds_hex, dollar = stored[3:6], stored[6:7]
    try:
        rounds = int(rounds_hex, 16) * 1000
    except ValueError:
        return False
    if dollar != b"$" or rounds <= 0:
        return False
    salt, digest = stored[header : header + _SALT_LENGTH], stored[header + _SALT_LENGTH :]
    computed = sha256_crypt(password.encode(), salt, rounds).encode("ascii")
    return hmac.compare_digest(computed, digest)


def stored_hash(plugin: str, password: str) -> str | None:
    """The authentication string a server stores for ``password`` under ``plugin`` when it can be known
    beforehand (``mysql_native_password``, ``ed25519``); None for a salted one."""
    if plugin == NATIVE:
        return native_hash(password)
    if plugin == ED25519:
        return ed25519_hash(password)
    return None


def matches(plugin: str, auth_string: str | bytes, password: str) -> bool | None:
    """Whether the account's ``auth_string`` (under ``plugin``) is ``password``'s; None when the operator
    cannot tell (a plugin whose format it does not check)."""
    if plugin == CACHING_SHA2:
        return caching_sha2_matches(auth_string, password)
    expected = stored_hash(plugin, password)
    if expected is None:
        return None
    text = auth_string.decode("utf-8", "replace") if isinstance(auth_string, bytes) else auth_string
    return hmac.compare_digest(text.encode(), expected.encode())


def fingerprint(auth_string: str | bytes) -> str:
    """``SHA2(auth_string, 256)`` as the server computes it (the bookkeeping's fingerprint)."""
    data = auth_string.encode("utf-8", "surrogateescape") if isinstance(auth_string, str) else auth_string
    return hashlib.sha256(data).hexdigest()


def _around(round_: int, p_bytes: bytes, s_bytes: bytes) -> tuple[bytes, bytes]:
    """What round ``round_`` of SHA-256 crypt hashes before and after the previous digest."""
    middle = (s_bytes if round_ % 3 else b"") + (p_bytes if round_ % 7 else b"")
    return (p_bytes + middle, b"") if round_ & 1 else (b"", middle + p_bytes)


def _repeat(block: bytes, length: int) -> bytes:
    """``block`` repeated to ``length`` bytes."""
    return (block * (length // len(block) + 1))[:length]


def _crypt64(high: int, middle: int, low: int, count: int) -> str:
    """``count`` characters of crypt's base-64 of the 24 bits ``high middle low``, low bits first."""
    word = (high << 16) | (middle << 8) | low
    out = []
    for _ in range(count):
        out.append(_CRYPT64[word & 0x3F])
        word >>= 6
    return "".join(out)
