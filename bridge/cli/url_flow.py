"""A call refused with ``-32042`` (URL elicitation required): the spec's flow.

A 2025-11-25 server that needs the user to finish something in a browser
first (approve a payment, sign in elsewhere) fails the call with error
``-32042``, listing the URLs in ``error.data.elicitations``. The host shows
each URL and its message and asks for consent (the form handler's URL mode:
``$url`` in scripted answers); at a terminal it offers to open the URL and
waits until the user says the step is done. Then the call is retried.
"""

from __future__ import annotations

import functools
import os
import sys
import webbrowser
from typing import Any, TextIO, cast

import trio

from bridge.elicit import CANCEL, ElicitationHandler, TerminalForm, read_stdin_line
from runtime.errors import PeerError
from runtime.requests import ElicitationRequest

__all__ = ["URL_REQUIRED", "UrlStepRefused", "complete_url_steps"]

URL_REQUIRED = -32042
MAX_URL_ROUNDS = 3
"""Retries after ``-32042`` before giving up (a server that keeps asking)."""


class UrlStepRefused(Exception):
    """The user declined or cancelled a URL step; the text says which."""


async def complete_url_steps(
    error: PeerError, handler: ElicitationHandler, out: TextIO
) -> None:
    """Take the user through every URL ``error`` lists; return when all are done.

    Raises:
        UrlStepRefused: a step was declined or cancelled.
        PeerError: ``error`` itself, when it lists no URL to visit.
    """
    data: Any = error.data
    fields = cast(dict[str, Any], data) if isinstance(data, dict) else {}
    listed = cast(list[Any], fields.get("elicitations") or [])
    steps = [cast(dict[str, Any], s) for s in listed if isinstance(s, dict)]
    if not steps:
        raise error
    for step in steps:
        request = ElicitationRequest(
            message=str(step.get("message") or error.message),
            mode="url",
            url=str(step.get("url") or ""),
            elicitation_id=step.get("elicitationId"),
        )
        reply = await handler.handle(request)
        if reply.action != "accept":
            raise UrlStepRefused(
                f"the server needs {request.url} completed first, and that was "
                f"{'declined' if reply.action == 'decline' else 'cancelled'}"
            )
        if isinstance(handler, TerminalForm):
            await _visit(request.url or "", out)


async def _visit(url: str, out: TextIO) -> None:
    if _graphical():
        answer = await read_stdin_line("Open it in your browser now? [Y/n] ", out)
        if answer is not None and answer.strip().lower() in ("", "y", "yes"):
            await trio.to_thread.run_sync(functools.partial(webbrowser.open, url))
    prompt = f"Press Enter when you have finished there ({CANCEL} to stop): "
    answer = await read_stdin_line(prompt, out)
    if answer is None or answer.strip().lower() == CANCEL:
        raise UrlStepRefused(
            f"the server needs {url} completed first, and that was cancelled"
        )


def _graphical() -> bool:
    """Whether a browser opens beside us: not on a Linux box with no display,
    where :mod:`webbrowser` would start a text browser in this terminal."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
