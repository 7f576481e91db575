"""``kubectl_complete-dbu WORDS…``: kubectl (1.26+) completes ``kubectl dbu …`` by running this program with
the words typed after ``dbu`` and reading Cobra's answer: one candidate a line, then ``:DIRECTIVE``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dbuser_operator.kubectl_dbu.cli import common_flags, parser
from dbuser_operator.kubectl_dbu.completion import candidates, wants_names
from dbuser_operator.kubectl_dbu.errors import ApiFailure, CommandError

NO_FILE_COMPLETION = 4  # Cobra's ShellCompDirectiveNoFileComp


def user_names(words: Sequence[str]) -> list[str]:
    """The DatabaseUsers of the namespace that ``words`` (-n, --context, --kubeconfig) name; none when they
    cannot be listed."""
    import asyncio  # noqa: PLC0415 - only when a name is wanted

    from dbuser_operator.kubectl_dbu.kube import KubeContext, connect, kubeconfig_path  # noqa: PLC0415
    from dbuser_operator.kubectl_dbu.names import DATABASE_USERS  # noqa: PLC0415

    flags = argparse.ArgumentParser(add_help=False)
    common_flags(flags)
    known, _ = flags.parse_known_args(list(words))

    async def names() -> list[str]:
        kube_context = KubeContext(kubeconfig_path(known.kubeconfig), known.context, known.namespace)
        async with connect(kube_context) as (kube, namespace):
            items, _ = await kube.list_all(DATABASE_USERS, namespace)
        return sorted(item["metadata"]["name"] for item in items)

    try:
        return asyncio.run(names())
    except (ApiFailure, CommandError, OSError):
        return []


def main(argv: Sequence[str] | None = None) -> int:
    """Print the candidates, then Cobra's directive (no file names)."""
    words = list(sys.argv[1:] if argv is None else argv)
    names = user_names(words) if wants_names(words) else []
    for word in candidates(parser(), words, names):
        print(word)
    print(f":{NO_FILE_COMPLETION}")
    return 0
