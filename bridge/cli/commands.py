"""The ``yieldmcp`` command line: ``serve``, ``call``, ``demo``, ``dev``, ``init``,
``install``, ``completion``, ``journal`` and ``tasks``.

* ``serve FILE_OR_MODULE [--http [HOST:]PORT] [--reload]`` serves the tools,
  resources and prompts a file defines, over stdio (default) or Streamable
  HTTP at ``/mcp`` (on 127.0.0.1 unless HOST says otherwise); ``--reload``
  loads them again when the file changes (:mod:`.reload`).
* ``call SERVER [TOOL] [--arg k=v ...]`` connects to any MCP server (a command
  to spawn, or an ``http(s)://`` URL), calls a tool (or lists them), answers
  sampling with a model and elicitation at the terminal or from answers given.
* ``demo`` plays tic-tac-toe against a model through the whole stack: it runs
  ``call "yieldmcp serve bridge.cli.ttt" play_ttt`` (the game ships in the
  package, :mod:`.ttt`).
* ``dev FILE_OR_MODULE`` serves the file and a page on 127.0.0.1 to try its
  tools in a browser (:mod:`.dev`).
* ``init [DIR]`` writes a small project (:mod:`.init_project`).
* ``install claude-desktop|cursor|vscode FILE`` adds ``serve FILE`` to a
  host's MCP configuration (:mod:`.install_host`).
* ``completion bash|zsh|fish`` prints a shell completion script
  (:mod:`.completion`).
* ``journal STORE_URL [ID]`` writes a call's or a task's journal from a
  store as JSON, for :func:`runtime.testing.replay` (:mod:`.journal_export`).
* ``tasks get|wait|cancel SERVER ID`` comes back to a task by its id
  (:mod:`.tasks_cmd`).

Errors are one line on stderr and a non-zero exit code; when serving over
stdio, stdout carries nothing but MCP (what the served code prints goes to
stderr). Errors and log records quote peers, so both are printed without
terminal control sequences (:func:`~bridge.elicit.printable`).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar, cast

from bridge import __version__

from . import auth_options, trace_options
from .host_options import (
    add_host_options,
    is_port,
    key_value,
    port,
    scripted_answers,
    shown,
    strict_json,
)
from .task_options import add_task_option

if TYPE_CHECKING:
    from pathlib import Path

    from .show import MediaFolder

# What runs a verb (trio, the runtime behind bridge.elicit) is imported when a
# verb runs: `--help`, `--version` and a usage error only build the parser.

# ``serve``'s flags and its run are imported by ``serve`` only (see _parser):
# they are made from the server's and the HTTP transport's limits, and a
# ``call`` or ``demo`` process need not build the server to parse its own flags.

__all__ = ["main"]

T = TypeVar("T")

EXIT_USAGE = 2
EXIT_FAILURE = 1


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 1."""

    code = EXIT_FAILURE


class UsageMistake(CliError):
    """A usage mistake argparse cannot see (flags that do not go together):
    one line, exit code 2."""

    code = EXIT_USAGE


class ConfigUsageError(CliError):
    """A configuration file that cannot be used, like a bad flag: exit code 2."""

    code = EXIT_USAGE


DEFAULT_HTTP_HOST = "127.0.0.1"
"""Where ``--http PORT`` listens: loopback, reachable from this machine only."""


def printable(text: str) -> str:
    """:func:`bridge.elicit.printable`, imported when first needed."""
    from bridge.elicit import printable as without_controls

    return without_controls(text)


def printable_line(text: str) -> str:
    """:func:`bridge.elicit.printable_line`, imported when first needed."""
    from bridge.elicit import printable_line as one_line

    return one_line(text)


def _escaped(text: str) -> str:
    """``text`` with each character that does not print as itself (a line
    break, ESC, a bidi override) written as ``repr`` writes it: one line,
    nothing a terminal obeys. Imports nothing (a usage error is printed
    before the runtime is loaded)."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def run_trio(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """:func:`.interrupt.run_trio` (Ctrl-C stops cleanly), imported when a
    verb runs."""
    from .interrupt import run_trio as run

    return run(main, *args)


def _host_port(value: str) -> tuple[str, int]:
    """``PORT`` (on 127.0.0.1) or ``HOST:PORT``: HOST a name or an IPv4
    address, or an IPv6 address in brackets (``[::1]:PORT``). Anything else
    is refused here, naming the flag: the socket layer would say only
    ``unknown error -2`` (``[::1``), fail with a traceback (a name too long
    for DNS), or listen somewhere unmeant (``::1]:80``)."""
    host, sep, number = value.rpartition(":")
    why = ""
    if not sep:
        host = DEFAULT_HTTP_HOST
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1] if _is_ipv6(host[1:-1]) else ""
        why = "" if host else " (the HOST in brackets is not an IPv6 address)"
    elif host.startswith("[") or ":" in host:
        why, host = " (an IPv6 HOST goes in brackets: [::1]:PORT)", ""
    elif host and not _is_host_name(host):
        why, host = " (HOST is a host name or an IPv4 address)", ""
    if not is_port(number) or not host:
        raise argparse.ArgumentTypeError(
            f"expected PORT or HOST:PORT (PORT 0-65535), got {shown(value, quote=True)}"
            f"{why}"
        )
    return host, int(number)


_LABEL: Final = re.compile(r"[A-Za-z0-9_-]{1,63}")


def _is_host_name(text: str) -> bool:
    """A name DNS can carry (labels of 1-63 ASCII letters, digits, ``-`` and
    ``_``; 253 characters in all), or an IPv4 address: the socket layer
    raises ``UnicodeError``, not ``OSError``, for a label it cannot encode."""
    labels = text.removesuffix(".").split(".")
    return len(text) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def _is_ipv6(text: str) -> bool:
    """An IPv6 address, with an interface's name for a scope if any."""
    import ipaddress

    _address, _, scope = text.partition("%")
    if scope and not _LABEL.fullmatch(scope):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake reported as one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        # argparse quotes most values with repr; not all (a limit's number).
        line = _escaped(f"{self.prog}: error: {message} (see --help)")
        self.exit(EXIT_USAGE, line + "\n")

    def parse_args(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> Any:  # (typeshed spells argparse's one signature thrice)
        """argparse's, with the words it did not recognize quoted as the
        user typed them, escaped (:func:`.host_options.shown`); argparse
        prints them raw, a newline or an escape sequence and all."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(map(shown, extra))}")
        return parsed


class _VerbParser(_Parser):
    """A verb's parser, whose words and flags may come in any order.

    Plain argparse takes a verb's optional word as absent once a flag follows
    the first (``call SERVER --json TOOL`` refused ``TOOL`` as unrecognized);
    argparse's intermixed parsing reads the flags first, then the words.
    """

    _intermixing = False

    def parse_known_args(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:  # (typeshed spells argparse's one signature thrice)
        if self._intermixing:  # the two passes of the intermixed parse
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _verb(argv: Sequence[str]) -> str | None:
    """The verb ``argv`` names: its first word that is not an option (the
    options before a verb, ``-v`` and ``--version``, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _parser(verb: str | None) -> argparse.ArgumentParser:
    """The command line's parser; ``serve``'s flags only when ``verb`` is
    ``serve`` (the only parser that reads them; adding them imports the server)."""
    parser = _Parser(
        prog="yieldmcp",
        description="MCP tools as generator functions that yield effects.",
    )
    _add_verbose(parser, "verbose")
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_VerbParser)
    _add_serve(verbs, with_flags=verb == "serve")
    _add_call(verbs)
    _add_demo(verbs)
    _add_dev(verbs)
    _add_init(verbs)
    _add_install(verbs)
    _add_completion(verbs)
    _add_journal(verbs)
    _add_tasks(verbs)
    return parser


def _add_verbose(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        dest=dest,
        default=0,
        help="log more to stderr (-vv: debug); before or after the verb",
    )


def _add_serve(verbs: Any, *, with_flags: bool) -> None:
    serve = verbs.add_parser(
        "serve",
        help="serve the tools a Python file or module defines",
        description=(
            "Serve the tools, resources and prompts defined in FILE_OR_MODULE "
            "(or its `server` object) over MCP: stdio by default, Streamable HTTP "
            "at /mcp with --http. Both protocol eras (2025-11-25 and 2026-07-28) "
            "are served on the same endpoint. Every flag can also be set in "
            "[tool.yieldmcp] of the project's pyproject.toml, or in a "
            "yieldmcp.toml, by its long name (max-calls = 64); flags override "
            "the file; --print-config shows what is in force and from where."
        ),
    )
    serve.set_defaults(run=_serve)
    if not with_flags:
        return
    from . import workers
    from .config_file import add_print_config_flag
    from .limits import add_limit_flags
    from .server_options import add_server_flags
    from .store_options import add_store_flags

    serve.add_argument(
        "target", metavar="FILE_OR_MODULE", help="e.g. examples/ttt.py or mypkg.tools"
    )
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        type=_host_port,
        help=(
            "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio; HOST "
            f"defaults to {DEFAULT_HTTP_HOST} (this machine only), 0.0.0.0 listens "
            "on every interface, [::1]:PORT is IPv6; PORT 0 picks a free one; "
            "the URL is printed on stderr"
        ),
    )
    serve.add_argument(
        "--reload",
        action="store_true",
        help=(
            "watch FILE and the modules beside it (same directory): on a change, "
            "load the tools again in place and tell connected clients "
            "(notifications/tools/list_changed, both eras); a file that no longer "
            "loads keeps the old tools and prints one line; calls in flight finish "
            "on the code they started with (not with --workers)"
        ),
    )
    auth_options.add_serve_options(serve)
    add_limit_flags(serve)
    add_server_flags(serve)
    add_store_flags(serve)
    _add_verbose(serve, "verbose_after_verb")
    workers.add_workers_flag(serve)
    add_print_config_flag(serve)


def _add_call(verbs: Any) -> None:
    call = verbs.add_parser(
        "call",
        help="call a tool on any MCP server, answering its questions",
        description=(
            "Connect to SERVER — a command to spawn (quoted, e.g. "
            "'yieldmcp serve examples/ttt.py') or an http(s):// URL — and call "
            "TOOL, answering sampling with --model and forms at the terminal "
            "(a command starting with `yieldmcp` runs this installation) "
            "(type :decline or :cancel at any prompt) or from --answers. Without "
            "TOOL, list the server's tools, resources and prompts; with "
            "--describe, show what TOOL takes and returns."
        ),
    )
    call.add_argument("server", metavar="SERVER", help="a server command or URL")
    call.add_argument("tool", metavar="TOOL", nargs="?", help="the tool to call")
    call.add_argument(
        "--describe",
        action="store_true",
        help="show TOOL's inputs as a form, and its output schema; call nothing",
    )
    call.add_argument(
        "--arg",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help=(
            "a tool argument (VALUE is JSON, or a plain string); repeatable. A "
            "KEY the tool's inputSchema does not name is warned about first"
        ),
    )
    call.add_argument(
        "--args", metavar="JSON", help="all tool arguments as a JSON object"
    )
    call.add_argument(
        "--no-validate-output",
        dest="validate_output",
        action="store_false",
        help=(
            "accept a result whose structuredContent does not match the "
            "tool's outputSchema (checked by default)"
        ),
    )
    add_host_options(call)
    add_task_option(call)
    auth_options.add_call_options(call)
    _add_verbose(call, "verbose_after_verb")
    trace_options.add_call_options(call)
    call.set_defaults(run=_call)


def _add_demo(verbs: Any) -> None:
    demo = verbs.add_parser(
        "demo",
        help="play tic-tac-toe against a model through the whole stack",
        description=(
            "Spawn `yieldmcp serve bridge.cli.ttt` and call play_ttt: the model "
            "(offline by default, labelled on screen) plays against you; you "
            "pick cells at the terminal. Same as: yieldmcp call 'yieldmcp serve "
            "examples/ttt.py' play_ttt."
        ),
    )
    demo.add_argument(
        "--seed", type=int, help="seed for choosing sides (random if absent)"
    )
    add_host_options(demo)
    _add_verbose(demo, "verbose_after_verb")
    demo.set_defaults(run=_demo)


def _add_dev(verbs: Any) -> None:
    dev = verbs.add_parser(
        "dev",
        help="try FILE's tools in a browser page, reloading on every save",
        description=(
            "Serve FILE and a page at http://127.0.0.1:PORT (printed with a "
            "one-time token): its tools, resources and prompts, a form per tool, "
            "Run in either era, the tool's questions (forms; samples answered by "
            "a model you pick or typed by hand), logs and progress, the result and "
            "the call's picture with the server's own steps, live; past calls run "
            "again. Editing FILE (or a module beside it) reloads the tools and the "
            "page follows. The page works offline; it listens on 127.0.0.1 only."
        ),
    )
    dev.add_argument("target", metavar="FILE_OR_MODULE", help="e.g. examples/ttt.py")
    dev.add_argument(
        "--port",
        type=port,
        default=0,
        help="the page's port on 127.0.0.1 (0: a free one)",
    )
    dev.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help=(
            "a model the page may answer samples with, besides the offline one "
            "(e.g. openai:gpt-4o-mini, keys from the environment); repeatable"
        ),
    )
    dev.add_argument(
        "--keep-calls",
        type=_positive,
        default=50,
        metavar="N",
        help="past calls the page keeps (50); the oldest is forgotten first",
    )
    dev.add_argument(
        "--keep-logs",
        type=_positive,
        default=200,
        metavar="N",
        help="log lines a call keeps on the page (200): the last; the rest counted",
    )
    dev.add_argument(
        "--max-body",
        type=_positive,
        default=1024 * 1024,
        metavar="BYTES",
        help="bytes a request from the page may carry (1 MiB)",
    )
    _add_verbose(dev, "verbose_after_verb")
    dev.set_defaults(run=_dev)


def _positive(value: str) -> int:
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return int(value)


def _add_init(verbs: Any) -> None:
    init = verbs.add_parser(
        "init",
        help="make a small project: a tool, its tests, a pyproject.toml",
        description=(
            "Write a project into DIR (default: the current folder), which must "
            "be empty or not exist: pyproject.toml (depending on this yieldmcp), "
            "tools.py (a tool with a form and a step), tests/test_tools.py (a "
            "ScriptedPeer test and a Hypothesis one) and README.md. Exit status 1, "
            "writing nothing, if DIR is not empty."
        ),
    )
    init.add_argument("folder", metavar="DIR", nargs="?", default=".", help="where")
    init.set_defaults(run=_init)


def _add_install(verbs: Any) -> None:
    install = verbs.add_parser(
        "install",
        help="add a server to Claude Desktop's, Cursor's or VS Code's MCP config",
        description=(
            "Add `yieldmcp serve FILE` (this installation's yieldmcp, FILE's "
            "absolute path, over stdio) to HOST's MCP configuration, keeping "
            "every other entry. A server of the same name, or a file that is "
            "not JSON, is refused (exit status 1) and nothing is written."
        ),
    )
    install.add_argument(
        "host", metavar="HOST", choices=("claude-desktop", "cursor", "vscode"),
        help="claude-desktop, cursor or vscode",
    )  # fmt: skip
    install.add_argument("target", metavar="FILE", help="the file to serve")
    install.add_argument(
        "--name", help="the server's name in the host (default: from FILE)"
    )
    install.add_argument(
        "--config",
        metavar="PATH",
        help=(
            "the configuration file to change (default: the host's own, e.g. "
            "~/.cursor/mcp.json; VS Code: the user profile's mcp.json, or pass "
            ".vscode/mcp.json for a workspace)"
        ),
    )
    install.add_argument(
        "--force", action="store_true", help="replace a server of the same name"
    )
    install.add_argument(
        "--dry-run", action="store_true", help="print the entry; write nothing"
    )
    install.set_defaults(run=_install)


def _add_completion(verbs: Any) -> None:
    from .completion import SHELLS

    completion = verbs.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=(
            "Print a completion script for SHELL: every verb and flag, and a "
            "flag's choices. bash: source <(yieldmcp completion bash); zsh: "
            "source <(yieldmcp completion zsh) after compinit in ~/.zshrc; fish: "
            "yieldmcp completion fish > ~/.config/fish/completions/yieldmcp.fish"
        ),
    )
    completion.add_argument(
        "shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish"
    )
    completion.set_defaults(run=_completion)


def _add_journal(verbs: Any) -> None:
    from .limits import Positive  # (imports no server)

    journal = verbs.add_parser(
        "journal",
        help="write a call's or a task's journal from a store, as JSON",
        description=(
            "Write the journal of the call or task ID, from the store at "
            "STORE_URL (what serve --store takes), as one JSON document on "
            "stdout: what runtime.testing.replay(tool, journal, params) reads. "
            "ID is a task id, a call id, or a 2026-07-28 requestState (opened "
            "with YIELDMCP_STATE_KEY, or the key the store keeps). Without ID, "
            "list the calls and tasks in the store. An unknown ID: exit status 1."
        ),
    )
    journal.add_argument(
        "store", metavar="STORE_URL", help="the store: what serve --store takes"
    )
    journal.add_argument(
        "id",
        metavar="ID",
        nargs="?",
        help=(
            "a task id, a call id from the list, or a 2026-07-28 requestState; "
            "without it: list the calls and tasks in the store"
        ),
    )
    journal.add_argument(
        "--store-timeout",
        type=Positive(float),
        default=5.0,
        metavar="SECONDS",
        help="seconds one store operation may take, opening it included (5)",
    )
    journal.set_defaults(run=_journal)


def _add_tasks(verbs: Any) -> None:
    from .tasks_cmd import add_tasks_verb

    tasks = add_tasks_verb(verbs)
    _add_verbose(tasks, "verbose_after_verb")
    tasks.set_defaults(run=_tasks)


# --- verbs -------------------------------------------------------------------------


def _configure_serve(args: argparse.Namespace) -> None:
    """``serve``'s settings from ``[tool.yieldmcp]`` / ``yieldmcp.toml`` where
    no flag gave them (:mod:`.config_file`); where each came from, kept on
    ``args`` for ``--print-config``."""
    from pathlib import Path

    from .argtree import verbs
    from .config_file import ConfigError, configure, explicit_dests, find

    fresh = _parser("serve")
    serve = next(verb.parser for verb in verbs(fresh) if verb.name == "serve")
    explicit = explicit_dests(fresh, serve, args.argv)
    try:
        found = find(Path.cwd(), args.target)
        sources = (
            dict.fromkeys(explicit, "flag")
            if found is None
            else configure(args, serve, found, explicit)
        )
    except ConfigError as exc:
        raise ConfigUsageError(str(exc)) from None
    args.config_found, args.config_sources, args.serve_parser = found, sources, serve


def _print_config(args: argparse.Namespace) -> int:
    from .config_file import settings_lines

    lines = settings_lines(
        args, args.serve_parser, args.config_sources, args.config_found
    )
    print("\n".join(lines))
    return 0


def _serve(args: argparse.Namespace) -> int:
    if args.print_config:
        return _print_config(args)
    if not args.verbose + args.verbose_after_verb:
        return _serve_loaded(args)
    from .request_log import logging_requests

    with logging_requests():  # -v: a line per request
        return _serve_loaded(args)


def _serve_loaded(args: argparse.Namespace) -> int:
    from . import workers
    from .limits import apply_limits, http_options
    from .loader import LoadError, load_server
    from .server_options import apply_server_options
    from .store_options import apply_store_options

    if args.http is None:
        from bridge.transports.stdio import reserve_stdout_for_mcp

        reserve_stdout_for_mcp()  # before the served code runs and prints
    if workers.in_worker():
        workers.exit_with_the_parent_while_starting()  # the served code may hang
    try:
        server = load_server(args.target)
        server.auth = auth_options.serve_auth(args, args.http) or server.auth
    except (LoadError, ValueError) as exc:
        raise CliError(str(exc)) from None

    try:
        apply_limits(server, args)
        apply_server_options(server, args)
        apply_store_options(server, args)
        options = http_options(args)
        workers.check_workers(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.reload:
        return _serve_reloading(server, args, options)
    if args.http is None:
        run_trio(server.serve_stdio)
        return 0
    if args.workers > 1 or workers.in_worker():
        return workers.serve(server, args, options)
    from .serving import ListenError, serve_http_announced

    host, port = args.http
    try:
        run_trio(serve_http_announced, server, host, port, options)
    except ListenError as exc:
        raise CliError(str(exc)) from None
    return 0


def _serve_reloading(server: Any, args: argparse.Namespace, options: Any) -> int:
    from .loader import LoadError
    from .reload import Reloader, serve_http_reloading, serve_stdio_reloading
    from .serving import ListenError

    if args.workers > 1:
        raise CliError("--reload serves from one process: drop --workers")
    try:
        reloader = Reloader(server, args.target)
    except LoadError as exc:
        raise CliError(str(exc)) from None
    if args.http is None:
        run_trio(serve_stdio_reloading, server, reloader)
        return 0
    host, port = args.http
    try:
        run_trio(serve_http_reloading, server, reloader, host, port, options)
    except ListenError as exc:
        raise CliError(str(exc)) from None
    return 0


def _dev(args: argparse.Namespace) -> int:
    import functools

    from .dev import models_from, serve_dev
    from .loader import LoadError, load_server
    from .serving import ListenError

    try:
        server = load_server(args.target)
        models = models_from(args.model)
    except (LoadError, ValueError) as exc:
        raise CliError(str(exc)) from None
    try:
        run_trio(
            functools.partial(
                serve_dev,
                keep_calls=args.keep_calls,
                keep_logs=args.keep_logs,
                max_body=args.max_body,
            ),
            server,
            args.target,
            args.port,
            models,
        )
    except* ListenError as group:
        failure: BaseException = group
        while isinstance(failure, BaseExceptionGroup):  # nurseries nest it
            failure = cast(BaseExceptionGroup[BaseException], failure).exceptions[0]
        raise CliError(str(failure)) from None
    return 0


def _init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .init_project import InitError, make_project

    folder = Path(args.folder)
    try:
        written = make_project(folder)
    except InitError as exc:
        raise CliError(str(exc)) from None
    for path in written:
        print(f"wrote {shown(path, cut=None)}")
    venv = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]"'
    print(f"next: {_cd(folder)}{venv}")
    print("      .venv/bin/pytest, then .venv/bin/yieldmcp serve tools.py")
    return 0


def _cd(folder: Path) -> str:
    """``cd DIR && `` for the next steps, as a shell reads it; nothing for
    the current folder. A name with controls in it is written ``$'...'``
    (bash, zsh), its controls escaped: never printed raw to the terminal."""
    if not folder.parts:  # "." (or "")
        return ""
    name = str(folder)
    if name.isprintable():
        return f"cd {shlex.quote(name)} && "
    escaped = "".join(
        char if char.isprintable() and char not in "\\'" else _ansi_c(char)
        for char in name
    )
    return f"cd $'{escaped}' && "


def _ansi_c(char: str) -> str:
    """One character in bash's ``$'...'`` quoting."""
    if char in "\\'":
        return "\\" + char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _install(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .install_host import (
        HOSTS,
        InstallError,
        check_entry,
        default_config,
        default_name,
        install,
        server_entry,
    )

    host = HOSTS[args.host]
    try:
        name: str = args.name or default_name(args.target)
        entry = server_entry(host, args.target)
        check_entry(name, entry)  # --dry-run prints only what install writes
        if args.dry_run:
            print(json.dumps({host.servers_key: {name: entry}}, indent=2))
            return 0
        config = Path(args.config) if args.config else default_config(host.name)
        install(host, config, name, entry, force=args.force)
    except InstallError as exc:
        raise CliError(str(exc)) from None
    # The path as given: a line break or an escape sequence in it is shown
    # escaped, never obeyed by the terminal.
    where = printable_line(str(config))
    print(f"added {name!r} to {where}: restart {host.title} to load it")
    return 0


def _completion(args: argparse.Namespace) -> int:
    from .completion import script

    sys.stdout.write(script(args.shell, _parser("serve")))
    return 0


def _journal(args: argparse.Namespace) -> int:
    from .journal_export import JournalError, export

    try:
        written = export(args.store, args.id, args.store_timeout)
    except JournalError as exc:
        raise CliError(str(exc)) from None
    if written:
        print(written)
    return 0


def _call(args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {}
    if args.args is not None:
        try:
            parsed: Any = strict_json(args.args)
        except json.JSONDecodeError as exc:
            raise CliError(f"--args is not valid JSON: {exc}") from None
        except RecursionError:
            raise CliError("--args is JSON nested too deep") from None
        if not isinstance(parsed, dict):
            raise CliError("--args must be a JSON object")
        arguments.update(cast(dict[str, Any], parsed))
    arguments.update(dict(args.arg))
    try:
        auth = auth_options.call_auth(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return _host(args, _server_target(args.server), args.tool, arguments, auth)


def _server_target(server: str) -> str | list[str]:
    """A URL as is; a command split like a shell would.

    A command starting with ``yieldmcp`` runs *this* installation of yieldmcp,
    so ``call "yieldmcp serve tools.py"`` works without the virtualenv on PATH.
    """
    from bridge.client import server_target

    try:
        target = server_target(server)
    except ValueError as exc:
        raise UsageMistake(f"{exc} (see --help)") from None
    if isinstance(target, list) and target[0] == "yieldmcp":
        return [sys.executable, "-m", "bridge.cli", *target[1:]]
    return target


def _demo(args: argparse.Namespace) -> int:
    # The game ships inside the package, so the demo runs from any install.
    target = [sys.executable, "-m", "bridge.cli", "serve", "bridge.cli.ttt"]
    arguments = {} if args.seed is None else {"seed": args.seed}
    return _host(args, target, "play_ttt", arguments)


def _host(
    args: argparse.Namespace,
    target: Any,
    tool: str | None,
    arguments: dict[str, Any],
    auth: Any = None,
) -> int:
    from .console import CallOptions, HostError, run_call

    try:
        answers = scripted_answers(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    options = CallOptions(
        target=target,
        tool=tool,
        arguments=arguments,
        model=args.model,
        model_timeout=args.model_timeout,
        model_max_answer=args.model_max_answer,
        answers=answers,
        json_output=args.json,
        era=args.era,
        auth=auth,
        connect_timeout=args.connect_timeout,
        timeout=args.timeout,
        describe=getattr(args, "describe", False),
        save_media=_media_folder(args.save_media),
        task=getattr(args, "task", False),
        validate_output=getattr(args, "validate_output", True),
        max_message=args.max_message,
        max_listing=args.max_listing,
        max_questions=args.max_questions,
        internal_patience=args.internal_patience,
    )
    try:
        return run_trio(run_call, options)
    except HostError as exc:
        raise CliError(str(exc)) from None


def _tasks(args: argparse.Namespace) -> int:
    from .console import CallOptions, HostError
    from .tasks_cmd import check_tasks_flags, run_tasks

    mistake = check_tasks_flags(args)
    if mistake is not None:
        raise UsageMistake(f"{mistake} (see --help)")
    try:
        answers = scripted_answers(args)
        auth = auth_options.call_auth(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    options = CallOptions(
        target=_server_target(args.server),
        tool=None,
        model=args.model,
        model_timeout=args.model_timeout,
        model_max_answer=args.model_max_answer,
        answers=answers,
        json_output=args.json,
        auth=auth,
        connect_timeout=args.connect_timeout,
        timeout=args.timeout,
        save_media=_media_folder(args.save_media),
        max_message=args.max_message,
        max_listing=args.max_listing,
        max_questions=args.max_questions,
        internal_patience=args.internal_patience,
    )
    try:
        return run_trio(run_tasks, options, args.action, args.task_id)
    except HostError as exc:
        raise CliError(str(exc)) from None


def _media_folder(path: Path | None) -> MediaFolder | None:
    """``--save-media DIR``, made and checked before the call, not after it."""
    if path is None:
        return None
    from . import show

    try:
        return show.MediaFolder.open(path)
    except OSError as exc:
        why = _not_a_folder(path, exc)
        raise CliError(f"cannot use --save-media {shown(path)}: {why}") from None


def _not_a_folder(path: Path, exc: OSError) -> str:
    """Why ``path`` cannot be ``--save-media``'s folder, in words: what is
    there, not only the errno's ("File exists", "Permission denied")."""
    import errno
    import stat

    reason = exc.strerror or "not a folder"
    try:
        mode = path.lstat().st_mode
    except OSError:
        return reason  # nothing there, and it could not be made
    if stat.S_ISLNK(mode):  # dangling, to a file, or not to be followed here
        said = "" if exc.errno == errno.EEXIST else f" ({reason})"
        return f"it is a symbolic link to no folder that can be used{said}"
    if stat.S_ISREG(mode):
        return "it is a file, not a folder"
    if not stat.S_ISDIR(mode):
        return "it is not a folder (a FIFO, a socket or a device)"
    return reason


def _traced(args: argparse.Namespace, run: Callable[[argparse.Namespace], int]) -> int:
    try:
        return trace_options.run(args, run)  # OTEL_* variables, --trace
    except trace_options.TraceOptionError as exc:
        raise CliError(str(exc)) from None


class _PrintableFormatter(logging.Formatter):
    """Log records quote peers (an error a server sent, an issuer's URL):
    shown without terminal control sequences, like everything else."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _log_to_stderr(level: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=level, handlers=[handler])
    # httpx logs each request's URL at INFO: a model's base URL may hold a
    # proxy's password, or a key in its query. Its warnings still show.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(max(level, logging.WARNING))


def _print_error(exc: Exception) -> None:
    """The one line of a failure: its words quote users and peers, so a line
    break in them is a space, and a control sequence is not printed."""
    print(f"yieldmcp: error: {printable_line(str(exc))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(_verb(words))
    args = parser.parse_args(words)
    args.argv = words  # for --workers
    if getattr(args, "verb", None) == "serve":
        try:  # before logging is set up: the file may say -v
            _configure_serve(args)
        except CliError as exc:
            _print_error(exc)
            return exc.code
    verbosity: int = args.verbose + getattr(args, "verbose_after_verb", 0)
    _log_to_stderr((logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)])
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return EXIT_USAGE
    from .interrupt import EXIT_INTERRUPTED, Interrupted
    from .output import OutputFailed, ReaderGone, guarded

    try:
        with guarded():
            return _traced(args, run)
    except CliError as exc:
        _print_error(exc)
        return exc.code
    except ReaderGone:  # `| head`: nothing more to tell it, or anyone
        return EXIT_FAILURE
    except OutputFailed as exc:
        _print_error(exc)
        return EXIT_FAILURE
    except (Interrupted, KeyboardInterrupt):
        return EXIT_INTERRUPTED
