"""``yieldmcp completion bash|zsh|fish``: a shell completion script.

Made from the argument parser (:mod:`.argtree`), so every verb and flag is
completed, and a flag's choices (``--stream-responses always|when-needed``,
``--era``) after it; anything else (a file to serve, a flag's value)
falls back to the shell's file names.

* bash: a function for ``complete -F``; load it with
  ``source <(yieldmcp completion bash)`` or save it under
  ``~/.local/share/bash-completion/completions/yieldmcp``.
* zsh: the same function through zsh's ``bashcompinit`` (shipped with zsh);
  ``source <(yieldmcp completion zsh)`` in ``~/.zshrc``, after ``compinit``.
* fish: ``complete`` commands, each flag with its help;
  ``yieldmcp completion fish > ~/.config/fish/completions/yieldmcp.fish``.
"""

from __future__ import annotations

import argparse
import shlex

from .argtree import Verb, options, positionals, verbs

__all__ = ["SHELLS", "script"]

SHELLS = ("bash", "zsh", "fish")
PROGRAM = "yieldmcp"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`)."""
    if shell == "fish":
        return _fish(parser)
    text = _bash(parser)
    if shell == "zsh":
        return (
            "# yieldmcp completion for zsh, through bashcompinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + text
        )
    return text


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return ["--help", *(flag for o in options(parser) for flag in o.option_strings)]


def _choices(action: argparse.Action) -> list[str]:
    return [str(choice) for choice in action.choices or ()]


def _words(words: list[str]) -> str:
    return shlex.quote(" ".join(words))


def _bash(parser: argparse.ArgumentParser) -> str:
    named = verbs(parser)
    names = [verb.name for verb in named]
    lines = [
        "# yieldmcp completion for bash: source <(yieldmcp completion bash)",
        "_yieldmcp() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}"',
        '    local prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local verb="" word i seen=0',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        '        if [[ -z "$verb" ]]; then',
        '            case "$word" in',
        f"                {'|'.join(names)}) verb=$word ;;",
        "            esac",
        '        elif [[ "$word" != -* ]]; then',
        "            seen=$((seen + 1))  # the verb's operands so far",
        "        fi",
        "    done",
        "    local flags values",
        '    case "$verb" in',
        f'        "") flags={_words(_flags(parser))} ;;',
    ]
    lines += [f"        {v.name}) flags={_words(_flags(v.parser))} ;;" for v in named]
    lines += ["    esac", '    case "$verb $prev" in']
    for verb in [Verb("", "", parser), *named]:
        for action in options(verb.parser):
            if action.choices:
                flags = "|".join(f'"{verb.name} {f}"' for f in action.option_strings)
                lines.append(f"        {flags}) values={_words(_choices(action))} ;;")
    lines += [
        "    esac",
        '    if [[ -n "$values" ]]; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        '    elif [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        '    elif [[ -z "$verb" ]]; then',
        f'        COMPREPLY=($(compgen -W {_words(names)} -- "$cur"))',
    ]
    for verb in named:  # a verb whose operand is one of a few words
        positional = [a for a in positionals(verb.parser) if a.choices]
        if positional:
            words = _words(_choices(positional[0]))
            lines += [  # its first operand; files after it
                f'    elif [[ "$verb" == {verb.name} && $seen == 0 ]]; then',
                f'        COMPREPLY=($(compgen -W {words} -- "$cur"))',
            ]
    lines += [
        "    fi",
        "}",
        f"complete -o default -o bashdefault -F _yieldmcp {PROGRAM}",
        "",
    ]
    return "\n".join(lines)


_DESCRIPTION_CHARS = 80
"""fish shows a description beside each candidate: the help's first clause."""


def _fish_text(text: str) -> str:
    words = " ".join(text.split())
    for end in ("; ", ". ", " ("):
        words = words.split(end, 1)[0]
    if len(words) > _DESCRIPTION_CHARS:
        words = words[: _DESCRIPTION_CHARS - 1] + "…"
    return shlex.quote(words)


def _fish(parser: argparse.ArgumentParser) -> str:
    named = verbs(parser)
    names = " ".join(verb.name for verb in named)
    lines = [
        "# yieldmcp completion for fish:",
        "#   yieldmcp completion fish > ~/.config/fish/completions/yieldmcp.fish",
        f"complete -c {PROGRAM} -f -n '__fish_use_subcommand'",
    ]
    for verb in named:
        lines.append(
            f"complete -c {PROGRAM} -n '__fish_use_subcommand' -a {verb.name} "
            f"-d {_fish_text(verb.help)}"
        )
    for verb in [Verb("", "", parser), *named]:
        condition = (
            f"__fish_seen_subcommand_from {verb.name}"
            if verb.name
            else f"not __fish_seen_subcommand_from {names}"
        )
        for action in options(verb.parser):
            lines.append(_fish_flag(condition, action))
        chosen = [p for p in positionals(verb.parser) if p.choices]
        if chosen:  # its first operand, one of a few words; files after it
            words = _choices(chosen[0])
            given = f"not __fish_seen_subcommand_from {' '.join(words)}"
            lines.append(
                f"complete -c {PROGRAM} -n '{condition}; and {given}' "
                f"-f -a {_words(words)}"
            )
    return "\n".join(lines) + "\n"


def _fish_flag(condition: str, action: argparse.Action) -> str:
    parts = [f"complete -c {PROGRAM} -n '{condition}'"]
    for flag in action.option_strings:
        if flag.startswith("--"):
            parts.append(f"-l {flag[2:]}")
        else:
            parts.append(f"-s {flag[1:]}")
    if action.choices:
        parts.append(f"-x -a {_words(_choices(action))}")
    elif action.nargs != 0:
        parts.append("-r")  # takes a value: a file name, or typed
    if action.help and action.help != argparse.SUPPRESS:
        parts.append(f"-d {_fish_text(str(action.help))}")
    return " ".join(parts)
