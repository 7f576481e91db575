"""dbuser-operator: MySQL and MariaDB user accounts, managed declaratively from Kubernetes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dbuser-operator")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
