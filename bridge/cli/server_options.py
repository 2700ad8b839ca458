"""``yieldmcp serve``'s flags for how the server waits on its clients.

``--sampling-timeout`` and ``--elicitation-timeout`` bound how long a tool
waits for a client's answer (``Server(sampling_timeout=,
elicitation_timeout=)``). What a flag does not set keeps the value the served
code chose (or the default).
"""

from __future__ import annotations

import argparse

from bridge.server.offer import DEFAULT_ELICITATION_TIMEOUT, DEFAULT_SAMPLING_TIMEOUT
from bridge.server.server import Server

__all__ = ["add_server_flags", "apply_server_options"]


def add_server_flags(command: argparse.ArgumentParser) -> None:
    """Add the flags for waiting on clients to ``serve``."""
    group = command.add_argument_group(
        "questions to the client", "how long a tool waits for answers"
    )
    group.add_argument(
        "--sampling-timeout",
        type=float,
        metavar="SECONDS",
        help=(
            "seconds a tool waits for the client's sampling answer before the "
            "request is withdrawn and the tool gets RequestTimeout "
            f"(default: {DEFAULT_SAMPLING_TIMEOUT:g})"
        ),
    )
    group.add_argument(
        "--elicitation-timeout",
        type=float,
        metavar="SECONDS",
        help=(
            "the same for elicitation, which waits on a person "
            f"(default: {DEFAULT_ELICITATION_TIMEOUT:g})"
        ),
    )


def apply_server_options(server: Server, args: argparse.Namespace) -> None:
    """Apply the flags to the loaded ``server``.

    Raises:
        ValueError: a timeout that is not positive.
    """
    for name in ("sampling_timeout", "elicitation_timeout"):
        value: float | None = getattr(args, name, None)
        if value is None:
            continue
        if not value > 0:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} must be positive, got {value:g}")
        setattr(server, name, value)
