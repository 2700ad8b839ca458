"""Observability for ``serve`` and ``call``: the ``OTEL_*`` variables, and
``call --trace FILE.html`` (the picture of the call).

:func:`prepare` runs before a verb: it sets up an OpenTelemetry SDK from the
``OTEL_*`` variables when they ask for an exporter (:mod:`bridge.telemetry.setup`).
"""

from __future__ import annotations

import argparse

__all__ = ["prepare"]


def prepare(args: argparse.Namespace) -> None:
    """Set up telemetry for the verb in ``args``.

    Raises:
        ValueError: the ``OTEL_*`` variables ask for what cannot be set up
            (one line, for the user).
    """
    if getattr(args, "verb", None) not in ("serve", "call", "demo"):
        return
    from bridge.telemetry.setup import SetupError, from_environment

    try:
        from_environment()
    except SetupError as exc:
        raise ValueError(str(exc)) from None
