"""Shell completion: the candidates after the words typed, and the scripts of ``kubectl dbu completion
bash|zsh``, which complete ``kubectl-dbu`` typed on its own through ``kubectl_complete-dbu``
(:mod:`.complete`, the program kubectl 1.26+ runs for ``kubectl dbu <TAB>``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

SHELLS = ("bash", "zsh")
NAMED = ("rotate", "consumers", "connect", "why", "certificates")  # commands whose argument is a DatabaseUser
VALUED = (
    "-n",
    "--namespace",
    "--context",
    "--kubeconfig",
    "-o",
    "--output",
    "--server",
    "--timeout",
    "--client",
)

BASH = """\
# kubectl-dbu completion for bash: source <(kubectl dbu completion bash)
_kubectl_dbu() {
  local IFS=$'\\n' words
  words=$(kubectl_complete-dbu "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null | grep -v '^:' | cut -f1)
  COMPREPLY=($(compgen -W "$words" -- "${COMP_WORDS[COMP_CWORD]}"))
}
complete -F _kubectl_dbu kubectl-dbu
"""
ZSH = """\
#compdef kubectl-dbu
# kubectl-dbu completion for zsh: source <(kubectl dbu completion zsh)
_kubectl_dbu() {
  local -a candidates
  candidates=(${(f)"$(kubectl_complete-dbu "${(@)words[2,CURRENT]}" 2>/dev/null | grep -v '^:' | cut -f1)"})
  compadd -a candidates
}
compdef _kubectl_dbu kubectl-dbu
"""


def script(shell: str) -> str:
    """The completion script for ``shell``."""
    return BASH if shell == "bash" else ZSH


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option for action in parser._actions for option in action.option_strings if option.startswith("--")
    ]


def _choices(parser: argparse.ArgumentParser, option: str) -> list[str]:
    """The values ``option`` of this command takes (``-o``: each command's own formats)."""
    for action in parser._actions:
        if option in action.option_strings:
            return [str(choice) for choice in action.choices or ()]
    return []


def _commands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def candidates(top: argparse.ArgumentParser, words: Sequence[str], names: Sequence[str] = ()) -> list[str]:
    """What may come at the last of ``words`` (the words after ``dbu``, the last one being typed);
    ``names``: the DatabaseUsers offered where a command takes one."""
    *before, current = list(words) or [""]
    commands = _commands(top)
    command = next((word for word in before if word in commands), None)
    if command is None:
        found = _options(top) if current.startswith("-") else list(commands)
    elif before[-1] in {"-o", "--output"}:
        found = _choices(commands[command], "--output")
    elif current.startswith("-"):
        found = _options(commands[command])
    elif command == "completion":
        found = list(SHELLS)
    elif wants_names(words):
        found = list(names)
    else:
        found = []
    return [word for word in found if word.startswith(current)]


def wants_names(words: Sequence[str]) -> bool:
    """Whether the last of ``words`` is the NAME of a command that takes a DatabaseUser: the first word
    after the command that is neither an option nor an option's value."""
    *before, current = list(words) or [""]
    command = next((index for index, word in enumerate(before) if word in NAMED), None)
    if command is None or current.startswith("-"):
        return False
    following = before[command + 1 :]
    values = {index + 1 for index, word in enumerate(following) if word in VALUED}
    return not any(not word.startswith("-") and index not in values for index, word in enumerate(following))
