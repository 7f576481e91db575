"""Run an Argo CD health check (Lua) the way Argo CD does: a fresh Lua 5.1 state, ``obj`` the live object."""

from __future__ import annotations

from typing import Any

import lupa.lua51 as lua51  # Argo CD runs gopher-lua, a Lua 5.1

from dbuser_operator.api.argocd_health import script


def health(kind: str, obj: dict[str, Any]) -> dict[str, str]:
    """The ``hs`` table that ``kind``'s health check returns for ``obj``: ``status`` and ``message``."""
    runtime = lua51.LuaRuntime(unpack_returned_tuples=True)
    runtime.globals().obj = runtime.table_from(obj, recursive=True)
    result = runtime.execute(script(kind))
    return dict(result.items())
