"""``serve FILE --reload`` (and ``dev``): new definitions, same server.

:class:`Reloader` watches the served file's directory (``watchfiles``, not
recursive) and, when FILE or a Python module beside it changes, imports FILE
afresh (the modules beside it too: they are dropped from ``sys.modules``
first) and offers what it now defines in place of what it offered
(:meth:`~bridge.server.offer.Offer.replace`): connected clients hear
``notifications/tools/list_changed`` in both eras, the way any list change is
announced. A call in flight keeps the tool object it started with.

A file that no longer loads keeps the old definitions and prints one line,
``yieldmcp: reload failed: FILE:LINE: SyntaxError: ...``, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import trio

from bridge.server.server import Server

from .loader import LoadError, load_module, served_place, server_of

__all__ = ["DEBOUNCE_MS", "Reloader", "offered_by"]

DEBOUNCE_MS = 200
"""How long a burst of writes (an editor's save) is gathered into one reload."""

_STOP_CHECK_MS = 500
"""How often the watching thread returns, so that a cancelled watch ends soon."""


def offered_by(server: Server) -> list[Any]:
    """Everything ``server`` offers, in one list (for :meth:`Server.replace`)."""
    return [
        *server.tools.values(),
        *server.resources.values(),
        *server.templates,
        *server.prompts.values(),
    ]


class Reloader:
    """Reloads ``target`` into ``server`` when its directory's modules change.

    ``report`` gets each one-line outcome (``reloaded …``, ``reload failed:
    …``); ``on_reload`` is called after each successful reload.
    """

    def __init__(
        self,
        server: Server,
        target: str,
        *,
        report: Callable[[str], None] | None = None,
        on_reload: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.target = target
        self.directory = _directory_of(target)
        self.report = report or _to_stderr
        self.on_reload = on_reload
        self.generation = 0  # successful reloads so far
        # Edits within one second of a compiled copy could be taken for it:
        # compile from source, always, while reloading is on.
        sys.dont_write_bytecode = True

    def reload(self) -> bool:
        """Load ``target`` again and offer what it defines; whether it loaded."""
        self._forget_modules()
        try:
            module = load_module(self.target)
            fresh = server_of(module, self.target)
            self.server.replace(*offered_by(fresh))
        except LoadError as exc:
            self.report(f"reload failed: {_one_line(exc)}")
            return False
        except (ValueError, TypeError) as exc:  # two tools of one name, say
            self.report(f"reload failed: {self.target}: {_first_line(exc)}")
            return False
        if getattr(module, "server", None) is fresh:
            # The new code's `server` is the one being served: a tool that
            # adds to it, or announces through it, reaches the clients.
            vars(module)["server"] = self.server
        self.generation += 1
        names = ", ".join(self.server.tools) or "none"
        self.report(f"reloaded {self.target}: tools {names}")
        if self.on_reload is not None:
            self.on_reload()
        return True

    async def watch(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Reload on every change of a module in the directory, until cancelled.

        Started (``nursery.start``) once the directory is watched, so an edit
        made after it is never missed.
        """
        import watchfiles

        def python_file(change: watchfiles.Change, path: str) -> bool:
            return path.endswith(".py") and Path(path).parent == self.directory

        changes = watchfiles.awatch(
            self.directory,
            watch_filter=python_file,
            recursive=False,
            debounce=DEBOUNCE_MS,
            rust_timeout=_STOP_CHECK_MS,
            yield_on_timeout=True,
        )
        started = False
        async for batch in changes:
            if not started:  # the first timeout: the watcher is running
                started = True
                task_status.started()
            if batch:
                self.reload()

    def _forget_modules(self) -> None:
        """Drop the modules loaded from the directory, so that they are
        imported afresh (a helper module beside FILE is code of FILE too)."""
        for name, module in list(sys.modules.items()):
            if _file_of(module) is not None and _file_of(module) == self.directory:
                del sys.modules[name]


def _file_of(module: ModuleType) -> Path | None:
    """The directory ``module`` was loaded from, or None (built-in, namespace)."""
    filename: Any = getattr(module, "__file__", None)
    if not isinstance(filename, str):
        return None
    return Path(filename).resolve().parent


def _directory_of(target: str) -> Path:
    path = Path(target)
    if path.suffix == ".py" or path.exists():
        return path.resolve().parent
    import importlib.util

    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise LoadError(f"--reload: cannot find the file of {target!r}")
    return Path(spec.origin).resolve().parent


def _to_stderr(line: str) -> None:
    print(f"yieldmcp: {line}", file=sys.stderr, flush=True)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _one_line(error: LoadError) -> str:
    """``FILE:LINE: Kind: message`` for the failure behind ``error``."""
    cause = error.__cause__
    if cause is None:  # loaded, but offers nothing, or two tools of one name
        return _first_line(error).removeprefix("cannot load ")
    where = _where(cause)
    detail = _first_line(cause) if not isinstance(cause, SyntaxError) else cause.msg
    why = f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__
    return f"{where}: {why}" if where else why


def _where(exc: BaseException) -> str | None:
    """``FILE:LINE`` of the served code the failure happened in."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno or 0}"
    place = served_place(exc)
    return f"{place[0]}:{place[1]}" if place else None


async def serve_stdio_reloading(server: Server, reloader: Reloader) -> None:
    """``serve FILE --reload`` over stdio: until stdin closes."""
    async with trio.open_nursery() as nursery:
        await nursery.start(reloader.watch)
        await server.serve_stdio()
        nursery.cancel_scope.cancel()


async def serve_http_reloading(
    server: Server, reloader: Reloader, host: str, port: int, options: dict[str, Any]
) -> None:
    """``serve FILE --http … --reload``: until cancelled or drained."""
    from .serving import serve_http_announced

    async with trio.open_nursery() as nursery:
        await nursery.start(reloader.watch)
        await serve_http_announced(server, host, port, options)
        nursery.cancel_scope.cancel()
