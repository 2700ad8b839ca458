"""The ``yieldmcp`` argument parser read as a tree: its verbs and their flags.

Shell completion (:mod:`.completion`) and the configuration file
(:mod:`.config_file`) are both made from the parser, so that a flag added to a
verb is completed and configurable with no code of theirs. argparse keeps the
tree in attributes it does not document; they are read here and nowhere else.
"""

from __future__ import annotations

import argparse
from typing import cast

import attrs

__all__ = ["Verb", "actions", "exclusive_groups", "options", "positionals", "verbs"]


def actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument of ``parser``, in the order they were added."""
    return list(parser._actions)  # pyright: ignore[reportPrivateUsage]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The flags of ``parser`` (``--help`` left out)."""
    return [
        action
        for action in actions(parser)
        if action.option_strings and not isinstance(action, argparse._HelpAction)  # pyright: ignore[reportPrivateUsage]
    ]


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The operands of ``parser`` (its verbs left out)."""
    return [
        action
        for action in actions(parser)
        if not action.option_strings
        and not isinstance(action, argparse._SubParsersAction)  # pyright: ignore[reportPrivateUsage]
    ]


def exclusive_groups(parser: argparse.ArgumentParser) -> list[list[argparse.Action]]:
    """The flags of each mutually exclusive group of ``parser``."""
    groups = parser._mutually_exclusive_groups  # pyright: ignore[reportPrivateUsage]
    return [list(group._group_actions) for group in groups]  # pyright: ignore[reportPrivateUsage]


@attrs.frozen
class Verb:
    """A verb of a parser (``serve``): its name, one-line help, own parser."""

    name: str
    help: str
    parser: argparse.ArgumentParser


def verbs(parser: argparse.ArgumentParser) -> list[Verb]:
    """The verbs of ``parser``, in the order they were added."""
    found: list[Verb] = []
    for action in actions(parser):
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            helps = {
                choice.dest: choice.help or ""
                for choice in action._choices_actions  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownVariableType]
            }
            choices = cast("dict[str, argparse.ArgumentParser]", action.choices)  # pyright: ignore[reportUnknownMemberType]
            for name, sub in choices.items():
                found.append(Verb(name, str(helps.get(name, "")), sub))
    return found
