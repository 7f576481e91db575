"""A SQL statement: a constant template, quoted fragments, and query parameters.

PyMySQL formats a query that has parameters with ``%``: its ``%s`` become the escaped parameters and a
literal ``%`` must be written ``%%``. Without parameters the text goes to the server as it is. A host
pattern such as ``'app'@'%'`` therefore needs different text in the two cases; :class:`Statement` does
that itself, so that no caller has to remember it.
"""

from __future__ import annotations

import functools
import re
from typing import LiteralString

from pydantic import SecretStr

from dbuser_operator.mysql.identifiers import SQL

Param = str | int | float | bytes | None

_PERCENT = re.compile(r"%(.?)", re.DOTALL)


class Statement:
    """One statement, built as ``Statement(template, *params, **fragments)``.

    ``template`` is constant SQL text (``str.format`` syntax: literal braces are doubled) with ``{name}``
    slots for the ``fragments`` (:class:`SQL` from :mod:`.identifiers`: quoted accounts and identifiers)
    and a ``%s`` for each parameter. Parameters are escaped by the driver; passwords always travel this
    way, as :class:`~pydantic.SecretStr`, which also makes error messages redact them. ``repr`` never
    shows parameters.
    """

    __slots__ = ("params", "secrets", "text")

    text: str
    params: tuple[Param, ...]  # as the driver gets them (secrets unwrapped)
    secrets: tuple[str, ...]  # the values of the SecretStr parameters

    def __init__(self, template: LiteralString, *params: Param | SecretStr, **fragments: SQL) -> None:
        for name, fragment in fragments.items():
            if not isinstance(fragment, SQL):
                raise TypeError(f"fragment {name!r} must be SQL from the identifiers module, not raw text")
        if params:
            _check_placeholders(template, len(params))
            if any("%" in fragment for fragment in fragments.values()):
                fragments = {name: SQL(fragment.replace("%", "%%")) for name, fragment in fragments.items()}
            self.secrets = tuple(p.get_secret_value() for p in params if isinstance(p, SecretStr))
            self.params = (
                tuple(p.get_secret_value() if isinstance(p, SecretStr) else p for p in params)
                if self.secrets
                else params  # type: ignore[assignment]  # no SecretStr among them
            )
        else:
            self.params = self.secrets = ()
        self.text = template.format(**fragments)

    def __repr__(self) -> str:
        hidden = f", <{len(self.params)} parameter(s) hidden>" if self.params else ""
        return f"Statement({self.text!r}{hidden})"


def _check_placeholders(template: str, expected: int) -> None:
    """With parameters, every ``%`` of the template must begin a ``%s``, one per parameter."""
    found = _placeholders(template)
    if found is None:
        raise ValueError(
            "a template with parameters may contain % only as %s placeholders; "
            "put literal text such as host patterns in {fragments}"
        )
    if found != expected:
        raise ValueError(f"the template has {found} %s placeholder(s) for {expected} parameter(s)")


@functools.lru_cache(maxsize=1024)  # templates are constants: a few hundred in all
def _placeholders(template: str) -> int | None:
    """How many ``%s`` the template has; None if it has a ``%`` that begins no ``%s``."""
    found = 0
    for match in _PERCENT.finditer(template):
        if match.group(1) != "s":
            return None
        found += 1
    return found
