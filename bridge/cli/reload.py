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
The file is imported on a worker thread, so an import that is slow or hangs
leaves the tools already served answering (and is reported after
:data:`SLOW_IMPORT` seconds); what changes meanwhile is loaded after it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import trio

from bridge.server.server import Server

from .loader import (
    LoadError,
    exits_at_import,
    load_module,
    quoted,
    served_place,
    server_of,
)

__all__ = ["DEBOUNCE_MS", "Reloader", "offered_by"]

DEBOUNCE_MS = 200
"""How long a burst of writes (an editor's save) is gathered into one reload."""

SLOW_IMPORT = 2.0
"""Seconds a reload's import may take before it is reported as still running."""

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
        self._importing = False  # a reload's import runs on a worker thread
        self._again = False  # the directory changed during that import
        # Edits within one second of a compiled copy could be taken for it:
        # compile from source, always, while reloading is on.
        sys.dont_write_bytecode = True

    def reload(self) -> bool:
        """Load ``target`` again and offer what it defines; whether it loaded."""
        return self._offer(self._load())

    def _load(self) -> tuple[ModuleType, Server] | str:
        """Import ``target`` afresh: its module and what it defines, or the
        one-line failure. Touches nothing served: it may run on a thread."""
        self._forget_modules()
        try:
            module = load_module(self.target)
            return module, server_of(module, self.target)
        except LoadError as exc:
            return f"reload failed: {_one_line(exc)}"
        except (ValueError, TypeError) as exc:  # two tools of one name, say
            return f"reload failed: {self.target}: {_first_line(exc)}"

    def _load_on_thread(self) -> tuple[ModuleType, Server] | str:
        """:meth:`_load` on a worker thread, where no Ctrl-C is delivered (the
        main thread gets those): a KeyboardInterrupt there is the file's own,
        raised at import, and a failed reload like any other."""
        try:
            return self._load()
        except KeyboardInterrupt:
            why = "it raises KeyboardInterrupt when imported"
            return f"reload failed: {self.target}: {why}"

    def _offer(self, loaded: tuple[ModuleType, Server] | str) -> bool:
        if isinstance(loaded, str):
            self.report(loaded)
            return False
        module, fresh = loaded
        try:
            self.server.replace(*offered_by(fresh))
        except (ValueError, TypeError) as exc:
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
        async with trio.open_nursery() as nursery:
            async for batch in changes:
                if not started:  # the first timeout: the watcher is running
                    started = True
                    task_status.started()
                if not batch:
                    continue
                if not self._importing:
                    self._importing = True
                    nursery.start_soon(self._reload_off_the_loop)
                elif not self._again:
                    self._again = True
                    self.report(
                        f"{self.target} changed again while its import still "
                        f"runs; restart to load it if that import never ends"
                    )

    async def _reload_off_the_loop(self) -> None:
        """:meth:`reload`, importing on a worker thread: the file's import
        may take long, or hang (a connection made at import that never
        answers), and the tools already served keep answering meanwhile. An
        edit made during the import is loaded once it ends."""
        try:
            while True:
                self._again = False
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._tell_if_slow)
                    loaded = await trio.to_thread.run_sync(
                        self._load_on_thread, abandon_on_cancel=True
                    )
                    nursery.cancel_scope.cancel()
                if not self._again:
                    self._offer(loaded)
                    return
        finally:
            self._importing = False

    async def _tell_if_slow(self) -> None:
        await trio.sleep(SLOW_IMPORT)
        self.report(
            f"{self.target} is still importing after {SLOW_IMPORT:g} s; the "
            f"tools it served keep answering"
        )

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
    return quoted(exc, as_text=True) or type(exc).__name__


def _one_line(error: LoadError) -> str:
    """``FILE:LINE: Kind: message`` for the failure behind ``error``."""
    cause = error.__cause__
    if cause is None:  # loaded, but offers nothing, or two tools of one name
        return _first_line(error).removeprefix("cannot load ")
    where = _where(cause)
    if isinstance(cause, SystemExit):
        return f"{where}: {exits_at_import(cause)}" if where else exits_at_import(cause)
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
