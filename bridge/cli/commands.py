"""The ``yieldmcp`` command line: ``serve``, ``call`` and ``demo``.

* ``serve FILE_OR_MODULE [--http [HOST:]PORT]`` serves the tools, resources and
  prompts a file defines, over stdio (default) or Streamable HTTP at ``/mcp``
  (on 127.0.0.1 unless HOST says otherwise).
* ``call SERVER [TOOL] [--arg k=v ...]`` connects to any MCP server (a command
  to spawn, or an ``http(s)://`` URL), calls a tool (or lists them), answers
  sampling with a model and elicitation at the terminal or from answers given.
* ``demo`` plays tic-tac-toe against a model through the whole stack: it runs
  ``call "yieldmcp serve bridge.cli.ttt" play_ttt`` (the game ships in the
  package, :mod:`.ttt`).

Errors are one line on stderr and a non-zero exit code; when serving over
stdio, stdout carries nothing but MCP (what the served code prints goes to
stderr).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

import trio

from . import auth_options, workers
from .limits import add_limit_flags, apply_limits, http_options
from .server_options import add_server_flags, apply_server_options

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 1."""


DEFAULT_HTTP_HOST = "127.0.0.1"
"""Where ``--http PORT`` listens: loopback, reachable from this machine only."""


def _host_port(value: str) -> tuple[str, int]:
    """``PORT`` (on 127.0.0.1) or ``HOST:PORT`` (``[::1]:PORT`` for IPv6)."""
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if sep else DEFAULT_HTTP_HOST
    if not (port.isascii() and port.isdigit() and int(port) <= 65535) or not host:
        raise argparse.ArgumentTypeError(
            f"expected PORT or HOST:PORT (PORT 0-65535), got {value!r}"
        )
    return host, int(port)


def _key_value(value: str) -> tuple[str, Any]:
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw  # a bare word is a string


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake reported as one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="yieldmcp",
        description="MCP tools as generator functions that yield effects.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more to stderr (-vv: debug)",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    _add_serve(verbs)
    _add_call(verbs)
    _add_demo(verbs)
    return parser


def _add_serve(verbs: Any) -> None:
    serve = verbs.add_parser(
        "serve",
        help="serve the tools a Python file or module defines",
        description=(
            "Serve the tools, resources and prompts defined in FILE_OR_MODULE "
            "(or its `server` object) over MCP: stdio by default, Streamable HTTP "
            "at /mcp with --http. Both protocol eras (2025-11-25 and 2026-07-28) "
            "are served on the same endpoint."
        ),
    )
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
            "on every interface, [::1]:PORT is IPv6; PORT 0 picks a free one (-v "
            "logs it)"
        ),
    )
    auth_options.add_serve_options(serve)
    add_limit_flags(serve)
    add_server_flags(serve)
    workers.add_workers_flag(serve)
    serve.set_defaults(run=_serve)


def _add_host_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--model",
        default="offline",
        metavar="SPEC",
        help=(
            "who answers sampling: offline[:SEED] (built-in, no API key; the "
            "default), openai:NAME, openai-responses:NAME, anthropic:NAME, "
            "ollama:NAME or gemini:NAME (keys and base URLs from OPENAI_API_KEY, "
            "OPENAI_BASE_URL, ANTHROPIC_API_KEY, OLLAMA_HOST, GEMINI_API_KEY)"
        ),
    )
    command.add_argument(
        "--answers",
        metavar="FILE",
        help=(
            'answer forms from a JSON file instead of the terminal: {"KEY": '
            'ANSWER or [ANSWERS...]}, each answer the form content, or "decline" '
            'or "cancel"; a form with no answer left is cancelled'
        ),
    )
    command.add_argument(
        "--answer",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=JSON",
        help="one scripted form answer (repeatable; used in order for that key)",
    )
    command.add_argument(
        "--era",
        choices=("auto", "legacy", "2026-07-28"),
        default="auto",
        help="protocol era: probe (auto), the 2025-11-25 handshake, or 2026-07-28",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the whole result as JSON, nothing else",
    )


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
            "TOOL, list the server's tools."
        ),
    )
    call.add_argument("server", metavar="SERVER", help="a server command or URL")
    call.add_argument("tool", metavar="TOOL", nargs="?", help="the tool to call")
    call.add_argument(
        "--arg",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=VALUE",
        help="a tool argument (VALUE is JSON, or a plain string); repeatable",
    )
    call.add_argument(
        "--args", metavar="JSON", help="all tool arguments as a JSON object"
    )
    _add_host_options(call)
    auth_options.add_call_options(call)
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
    _add_host_options(demo)
    demo.set_defaults(run=_demo)


# --- verbs -------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from .loader import LoadError, load_server

    if args.http is None:
        from bridge.transports.stdio import reserve_stdout_for_mcp

        reserve_stdout_for_mcp()  # before the served code runs and prints
    try:
        server = load_server(args.target)
        server.auth = auth_options.serve_auth(args, args.http) or server.auth
    except (LoadError, ValueError) as exc:
        raise CliError(str(exc)) from None

    try:
        apply_limits(server, args)
        apply_server_options(server, args)
        options = http_options(args)
        workers.check_workers(args)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.http is None:
        trio.run(server.serve_stdio)
        return 0
    if args.workers > 1 or workers.in_worker():
        return workers.serve(server, args, options)
    from bridge.transports.http.app import serve_http

    host, port = args.http
    trio.run(functools.partial(serve_http, server, host, port, **options))
    return 0


def _call(args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {}
    if args.args is not None:
        try:
            parsed: Any = json.loads(args.args)
        except json.JSONDecodeError as exc:
            raise CliError(f"--args is not valid JSON: {exc}") from None
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
    if server.startswith(("http://", "https://")):
        return server
    argv = shlex.split(server)
    if argv and argv[0] == "yieldmcp":
        return [sys.executable, "-m", "bridge.cli", *argv[1:]]
    return argv


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

    options = CallOptions(
        target=target,
        tool=tool,
        arguments=arguments,
        model=args.model,
        answers=_answers(args),
        json_output=args.json,
        era=args.era,
        auth=auth,
    )
    try:
        return trio.run(run_call, options)
    except HostError as exc:
        raise CliError(str(exc)) from None


def _answers(args: argparse.Namespace) -> Any:
    from bridge.elicit import ScriptedAnswers

    if args.answers is None and not args.answer:
        return None
    script: dict[str, Any] = {}
    if args.answers is not None:
        try:
            script = json.loads(Path(args.answers).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CliError(f"cannot read --answers {args.answers}: {exc}") from None
        if not isinstance(script, dict):
            raise CliError("--answers must hold a JSON object of KEY: answers")
    for key, value in args.answer:
        listed = script.get(key, [])
        script[key] = [*(listed if isinstance(listed, list) else [listed]), value]
    try:
        return ScriptedAnswers(script)
    except ValueError as exc:
        raise CliError(f"bad scripted answers: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for --workers
    verbosity: int = args.verbose
    logging.basicConfig(
        stream=sys.stderr,
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return run(args)
    except CliError as exc:
        print(f"yieldmcp: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
