"""Where the test binaries (etcd, kube-apiserver, kubectl, helm, actionlint) are found."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


class BinaryNotFoundError(FileNotFoundError):
    """A test binary is in none of the searched directories."""


@dataclass(frozen=True)
class Binaries:
    """Looks binaries up in ``KUBEBUILDER_ASSETS`` first, then in the given directories, in order."""

    directories: Sequence[Path] = field(default_factory=tuple)

    @classmethod
    def from_environment(cls, *fallback: Path) -> Binaries:
        """``KUBEBUILDER_ASSETS`` (when set), then ``fallback``."""
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        return cls(tuple([Path(assets)] if assets else []) + tuple(fallback))

    def path(self, name: str) -> Path:
        """The executable ``name``; raises :class:`BinaryNotFoundError` naming where it looked."""
        for directory in self.directories:
            candidate = directory / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        searched = ", ".join(str(d) for d in self.directories) or "no directory"
        raise BinaryNotFoundError(
            f"{name} not found (searched {searched}); run hack/testbin.sh to build the test binaries"
        )
