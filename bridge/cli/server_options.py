"""``yieldmcp serve``'s flags for how the server asks its clients.

``--sampling-timeout`` and ``--elicitation-timeout`` bound how long a tool
waits for a client's answer (``Server(sampling_timeout=,
elicitation_timeout=)``). ``--model PROVIDER:MODEL`` gives the server its own
model, answering samples for clients that cannot (``Server(sampler=)``;
``--model-always``: for every client; ``--model-max-answer``: the largest
answer read from it); its key comes from the server's environment and is
never logged. What a flag does not set keeps the value the
served code chose (or the default).
"""

from __future__ import annotations

import argparse
from typing import Any

from bridge.cli.host_options import MAX_ANSWER, positive_int
from bridge.server.offer import DEFAULT_ELICITATION_TIMEOUT, DEFAULT_SAMPLING_TIMEOUT
from bridge.server.server import Server

__all__ = ["add_server_flags", "apply_server_options"]


def add_server_flags(command: argparse.ArgumentParser) -> None:
    """Add the flags for waiting on clients to ``serve``."""
    group = command.add_argument_group(
        "questions to the client",
        "how long a tool waits for answers; who samples when the client cannot",
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
    _add_model_flags(group)


def _add_model_flags(group: Any) -> None:  # an argparse argument group
    group.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help=(
            "the server's own model, answering a tool's samples when the client "
            "did not declare sampling (or sampling.tools for a sample offering "
            "tools): openai:NAME, openai-responses:NAME, anthropic:NAME, "
            "ollama:NAME, gemini:NAME or offline[:SEED]; keys from the server's "
            "environment (OPENAI_API_KEY, ...). Elicitation has no such fallback"
        ),
    )
    group.add_argument(
        "--model-always",
        action="store_true",
        help="answer every sample with --model, even for clients that can sample",
    )
    group.add_argument(
        "--model-max-answer",
        type=positive_int,
        metavar="BYTES",
        help=(
            "the largest answer read from --model, whole or streamed "
            f"(default {MAX_ANSWER}, {MAX_ANSWER // 2**20} MiB)"
        ),
    )


def apply_server_options(server: Server, args: argparse.Namespace) -> None:
    """Apply the flags to the loaded ``server``.

    Raises:
        ValueError: a timeout that is not positive, a bad ``--model`` (an
            unknown provider, a missing key), or ``--model-always`` or
            ``--model-max-answer`` alone.
    """
    _apply_model(server, args)
    for name in ("sampling_timeout", "elicitation_timeout"):
        value: float | None = getattr(args, name, None)
        if value is None:
            continue
        if not value > 0:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} must be positive, got {value:g}")
        setattr(server, name, value)


def _apply_model(server: Server, args: argparse.Namespace) -> None:
    spec: str | None = getattr(args, "model", None)
    always: bool = getattr(args, "model_always", False)
    largest: int | None = getattr(args, "model_max_answer", None)
    if spec is None:
        if always:
            raise ValueError("--model-always needs --model PROVIDER:MODEL")
        if largest is not None:
            raise ValueError("--model-max-answer needs --model PROVIDER:MODEL")
        return
    from bridge.providers import provider_from_spec

    # ProviderConfigError is a ValueError; its message names the variable to
    # set, never a key's value.
    server.sampler = provider_from_spec(spec, max_answer=largest or MAX_ANSWER)
    server.sample_always = always
