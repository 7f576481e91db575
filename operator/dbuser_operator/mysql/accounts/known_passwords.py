"""The passwords this process set on a server's accounts, as keyed digests: whether a Secret's new value is
the password an account has, without the server's salted hash (checking MySQL's ``caching_sha2_password``
on the client costs thousands of rounds of SHA-256: :func:`.password_hashes.caching_sha2_matches`).

An entry is ``(user, host)`` → (credential marker, digest): the password this process set on the account,
with that marker in the same statement (:mod:`.dual_password`). It answers only while the account still
shows that marker, and its caller only while the account's fingerprint is the recorded one: any other
change of the password replaces the marker (another replica, another rotation) or the fingerprint (by
hand). A marker names one credential (a Secret's version, or a generated password's id), so the same
marker means the same password, whoever set it.

The digest is BLAKE2b keyed with a random key of this process: never written anywhere, and worth nothing
without the key (the process holds the passwords themselves in its Secret cache anyway). A restart forgets
everything; so does an entry pushed out by :data:`LIMIT` newer ones: the caller then asks the server.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from typing import Final

LIMIT: Final = 10_000  # accounts remembered per server at most (about 150 bytes each)
_DIGEST_SIZE: Final = 16


class KnownPasswords:
    """What this process set on one server's accounts: marker and keyed digest of the password, by account."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._key = secrets.token_bytes(32)
        self._limit = limit
        self._entries: OrderedDict[tuple[str, str], tuple[str, bytes]] = OrderedDict()

    def _digest(self, password: str) -> bytes:
        return hashlib.blake2b(password.encode(), key=self._key, digest_size=_DIGEST_SIZE).digest()

    def remember(self, user: str, host: str, marker: str, password: str) -> None:
        """``password`` is now the account's, set with ``marker`` in the same statement."""
        key = (user, host.lower())
        self._entries[key] = (marker, self._digest(password))
        self._entries.move_to_end(key)
        while len(self._entries) > self._limit:
            self._entries.popitem(last=False)

    def holds(self, user: str, host: str, marker: str | None, password: str) -> bool | None:
        """Whether the account, showing ``marker``, has ``password``; None when this process cannot tell
        (it did not set the password that carries ``marker``, or has forgotten it)."""
        entry = self._entries.get((user, host.lower()))
        if marker is None or entry is None or entry[0] != marker:
            return None
        return hmac.compare_digest(entry[1], self._digest(password))

    def forget(self, user: str, host: str) -> None:
        """The account is gone, or its password is no longer known to be what this process set."""
        self._entries.pop((user, host.lower()), None)

    def __len__(self) -> int:
        return len(self._entries)
