"""Import kubernetes-asyncio without the generated API classes and models the runtime never uses.

``kubernetes_asyncio/client/__init__.py`` imports every API class and every model (about 40 MiB of
resident memory, a third of the idle operator), and ``kubernetes_asyncio/__init__.py`` imports it. The
runtime uses only ``ApiClient`` (with raw JSON), ``Configuration``, ``ApiException`` and the kubeconfig
loaders. :func:`install` puts stand-ins for the packages ``kubernetes_asyncio``,
``kubernetes_asyncio.client`` and ``kubernetes_asyncio.client.models`` in ``sys.modules``: their
submodules import as usual, the names above come from their own modules, and the first use of any other
name runs the real package ``__init__`` (so every use still works; it only costs the memory then).

Call it first thing in a process's entry point (``python -m dbuser_operator``), before anything imports
kubernetes-asyncio; it does nothing once kubernetes-asyncio is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")
# Names of a stand-in taken from one of its submodules, without the package's __init__.
_HOMES = {
    "kubernetes_asyncio.client": {
        "ApiClient": "api_client",
        "Configuration": "configuration",
        "ApiException": "exceptions",
        "ApiValueError": "exceptions",
        "ApiTypeError": "exceptions",
        "ApiKeyError": "exceptions",
        "OpenApiException": "exceptions",
    },
}


class LazyPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first use of a name that is not one of its submodules."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        home = _HOMES.get(self.__name__, {}).get(name)
        if home is not None:
            value = getattr(importlib.import_module(f"{self.__name__}.{home}"), name)
        elif importlib.util.find_spec(f"{self.__name__}.{name}") is not None:
            value = importlib.import_module(f"{self.__name__}.{name}")
        else:
            self.load()
            try:
                return self.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        setattr(self, name, value)
        return value

    def load(self) -> None:
        """Run the real ``__init__`` in this module (once)."""
        if self.__dict__.get("_lean_loaded"):
            return
        self.__dict__["_lean_loaded"] = True
        spec = self.__spec__
        assert spec is not None
        assert spec.loader is not None
        code = spec.loader.get_code(self.__name__)  # type: ignore[attr-defined]
        exec(code, self.__dict__)  # noqa: S102 - the package's own __init__


def install() -> bool:
    """Put the stand-ins in place; False (and nothing done) when kubernetes-asyncio is already imported."""
    if any(name in sys.modules for name in PACKAGES):
        return False
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return False
        module = LazyPackage(name)
        module.__spec__ = spec
        module.__loader__ = spec.loader
        module.__file__ = spec.origin
        module.__path__ = list(spec.submodule_search_locations)
        module.__package__ = name
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    return True
