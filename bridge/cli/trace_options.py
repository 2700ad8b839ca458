"""Observability for ``serve`` and ``call``: the ``OTEL_*`` variables, and
``call --trace FILE.html`` (the picture of the call).

:func:`run` runs a verb: first it sets up an OpenTelemetry SDK from the
``OTEL_*`` variables when they ask for an exporter
(:mod:`bridge.telemetry.setup`); with ``--trace`` it records the call's wire
(:mod:`bridge.cli.trace_record`) and writes the page when the call ends, how
ever it ends, saying where on stderr (``trace written to PATH``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["TraceOptionError", "add_call_options", "run"]


class TraceOptionError(Exception):
    """An ``OTEL_*`` variable or ``--trace`` that cannot be honoured (one line)."""


def add_call_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--trace",
        metavar="FILE.html",
        help=(
            "write a picture of the call to FILE.html: one self-contained page, "
            "a lane per branch and a bar per question, log and progress (hover "
            "for what the wire carried)"
        ),
    )


def run(args: argparse.Namespace, verb: Callable[[argparse.Namespace], int]) -> int:
    """``verb(args)``, with telemetry set up and, for ``--trace``, recorded.

    Raises:
        TraceOptionError: the ``OTEL_*`` variables ask for what cannot be set
            up, or FILE.html cannot be written.
    """
    if getattr(args, "verb", None) in ("serve", "call", "demo"):
        from bridge.telemetry.setup import SetupError, from_environment

        try:
            from_environment()
        except SetupError as exc:
            raise TraceOptionError(str(exc)) from None
    path: str | None = getattr(args, "trace", None)
    if path is None:
        return verb(args)
    target = Path(path)
    try:
        target.write_text("", encoding="utf-8")  # fail now, not after the call
    except OSError as exc:
        raise TraceOptionError(f"cannot write --trace {path}: {exc}") from None
    # Only a traced call records its wire and draws the page.
    from bridge.jsonrpc import tap
    from runtime.picture import page

    from .trace_record import WireRecorder

    tool: str | None = getattr(args, "tool", None)
    recorder = WireRecorder(f"call {tool}" if tool else "call")
    tap.install("picture", recorder.factory)
    try:
        return verb(args)
    finally:
        tap.install("picture", None)
        target.write_text(page(recorder.timeline), encoding="utf-8")
        print(f"trace written to {target.resolve()}", file=sys.stderr)
