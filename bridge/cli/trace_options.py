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
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .limits import Positive
from .whole_file import unusual, write_whole

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
    command.add_argument(
        "--trace-max-notices",
        type=Positive(int),
        default=None,
        metavar="N",
        help=(
            "log and progress notices the picture keeps; later ones are left "
            "out, and a bar says so (default: 2000)"
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
    _check_writable(target, path)  # fail now, not after the call
    # Only a traced call records its wire and draws the page.
    from bridge.jsonrpc import tap
    from runtime.picture import page

    from .trace_record import WireRecorder

    tool: str | None = getattr(args, "tool", None)
    notices: int | None = getattr(args, "trace_max_notices", None)
    recorder = WireRecorder(
        f"call {tool}" if tool else "call",
        **({} if notices is None else {"max_notices": notices}),
    )
    tap.install("picture", recorder.factory)
    try:
        return verb(args)
    finally:
        tap.install("picture", None)
        _write(target, path, page(recorder.timeline))
        print(f"trace written to {target.resolve()}", file=sys.stderr)


def _check_writable(target: Path, path: str) -> None:
    """Refuse ``--trace`` at once where the page could not be written: a
    link, FIFO or folder there, or a folder we may not write to."""
    reason = unusual(target)
    if reason is None:
        try:
            handle, probe = tempfile.mkstemp(prefix=".", dir=target.parent)
            os.close(handle)
            os.unlink(probe)
        except OSError as exc:
            reason = str(exc)
    if reason is not None:
        raise TraceOptionError(f"cannot write --trace {path}: {reason}")


def _write(target: Path, path: str, text: str) -> None:
    """The page, written whole (:mod:`.whole_file`): whatever was planted at
    ``target`` during the call is replaced, not followed."""
    try:
        write_whole(target, text)
    except OSError as exc:
        raise TraceOptionError(f"cannot write --trace {path}: {exc}") from None
