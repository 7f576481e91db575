#!/usr/bin/env bash
# Regenerate requirements.lock: the runtime dependencies of pyproject.toml ([project] dependencies, no
# extras) pinned with the hashes of every file of each version, for any platform (--universal), as the image
# installs them (Dockerfile: pip install --require-hashes). Run after a change of the dependencies, or to
# take newer versions; tests/unit/chart/test_lock.py checks that the lock still satisfies pyproject.toml.
# uv comes with the dev extras (hack/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
UV=${UV:-.venv/bin/uv}
"$UV" pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 --no-annotate \
  --quiet --custom-compile-command hack/lock.sh -o requirements.lock
