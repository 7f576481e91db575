"""Generated passwords: drawn with ``secrets``, from characters that need no escaping in a URL.

Every character class of the set occurs at least once (candidates without one are drawn again, which keeps
the choice uniform among the passwords that qualify), so that a server's password policy
(``validate_password``: mixed case, digits, and symbols with ``AlphanumericSymbols``) accepts them.
"""

from __future__ import annotations

import secrets
import string
from typing import Final

SYMBOLS: Final = "-_.~"  # RFC 3986's unreserved symbols: never percent-encoded, safe in a shell word
CHARACTER_CLASSES: Final[dict[str, tuple[str, ...]]] = {
    "Alphanumeric": (string.ascii_lowercase, string.ascii_uppercase, string.digits),
    "AlphanumericSymbols": (string.ascii_lowercase, string.ascii_uppercase, string.digits, SYMBOLS),
}
MIN_LENGTH: Final = 16
MAX_LENGTH: Final = 128


def generate_password(length: int, character_set: str) -> str:
    """A new random password of ``length`` characters of ``character_set`` (Alphanumeric or
    AlphanumericSymbols), every class of the set present."""
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ValueError(f"a generated password has {MIN_LENGTH} to {MAX_LENGTH} characters, not {length}")
    try:
        classes = CHARACTER_CLASSES[character_set]
    except KeyError:
        raise ValueError(f"unknown character set {character_set!r}") from None
    alphabet = "".join(classes)
    while True:
        password = "".join(secrets.choice(alphabet) for _ in range(length))
        if all(any(character in members for character in password) for members in classes):
            return password
