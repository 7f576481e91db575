"""dbuser-operator: MySQL and MariaDB user accounts, managed declaratively from Kubernetes."""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed package's metadata when first asked for: importing
    ``importlib.metadata`` costs tens of milliseconds that a ``kubectl dbu --help`` should not pay."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - see above

    try:
        return version("dbuser-operator")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"
