"""``yieldmcp ARGS`` in the test's own process: :func:`bridge.cli.main`.

What a test of the command line asserts (the exit code, stdout, the one-line
error on stderr) does not depend on the command being a process of its own;
starting one costs seconds of imports on CI's two cores. :func:`yieldmcp`
runs ``main(argv)`` with stdout and stderr captured, the environment and the
working directory set for the call and restored after, and answers like the
``subprocess.run`` it replaces. Servers the command starts
(``call "yieldmcp serve ..."``) are still real processes. One real-process
test per verb stays with the console script (``test_cli.py``), and forms at
the terminal stay real processes: they read file descriptor 0 itself.

Only for sync tests: ``main`` runs its own ``trio.run``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bridge.cli import main
from tests.helpers import ROOT


@dataclass(frozen=True)
class Done:
    """How the command ended: as :class:`subprocess.CompletedProcess` says it."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _own_log_handlers() -> Iterator[None]:
    """The command configures logging to its stderr (``logging.basicConfig``,
    which does nothing while the root logger has handlers): it finds none,
    and the test's are back afterwards."""
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:] = saved
        root.setLevel(level)


def yieldmcp(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path = ROOT
) -> Done:
    """Run ``yieldmcp ARGS`` here; ``env`` replaces the environment for it."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    with (
        _environment(env),
        _own_log_handlers(),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        os.chdir(cwd)
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            os.chdir(previous)
            sys.stdout.flush()
    return Done(list(args), code, stdout.getvalue(), stderr.getvalue())
