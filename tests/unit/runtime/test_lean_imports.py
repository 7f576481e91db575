"""kubernetes-asyncio without its generated models, as the operator's entry point imports it."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from dbuser_operator.runtime import lean_imports
assert lean_imports.install()
import dbuser_operator.app
from kubernetes_asyncio import client, config
loaded = sorted(name for name in sys.modules if name.startswith("kubernetes_asyncio.client.models."))
assert loaded == [], loaded
assert not any(name.startswith("kubernetes_asyncio.client.api.") for name in sys.modules)
assert type(client.Configuration()).__module__ == "kubernetes_asyncio.client.configuration"
assert callable(config.load_kube_config)
# Any other name still works: the real package loads then.
assert client.CoreV1Api.__name__ == "CoreV1Api"
assert client.V1ObjectMeta(name="x").name == "x"
assert client.models.V1Pod.__name__ == "V1Pod"
assert not lean_imports.install()  # once imported, nothing to do
print("ok")
"""


def test_the_app_imports_without_the_generated_client_and_everything_still_resolves() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
