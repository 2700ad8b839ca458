"""The ``yieldmcp`` command line.

Verbs:

* ``serve FILE_OR_MODULE [--http HOST:PORT]``: serve the tools, resources and
  prompts a file defines, over stdio (default) or Streamable HTTP at ``/mcp``.

Errors are one line on stderr and a non-zero exit code; stdout carries nothing
but MCP when serving over stdio.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import trio

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 1."""


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    serve = verbs.add_parser(
        "serve",
        help="serve the tools a Python file or module defines",
        description=(
            "Serve the tools, resources and prompts defined in FILE_OR_MODULE "
            "(or its `server` object) over MCP: stdio by default, Streamable HTTP "
            "at /mcp with --http."
        ),
    )
    serve.add_argument(
        "target", metavar="FILE_OR_MODULE", help="e.g. examples/ttt.py or pkg.tools"
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve Streamable HTTP at http://HOST:PORT/mcp (use 127.0.0.1 for local)",
    )
    serve.set_defaults(run=_serve)
    return parser


def _serve(args: argparse.Namespace) -> None:
    from .loader import LoadError, load_server

    try:
        server = load_server(args.target)
    except LoadError as exc:
        raise CliError(str(exc)) from None
    if args.http is None:
        trio.run(server.serve_stdio)
        return
    from .transports.http import serve_http

    host, port = args.http
    trio.run(serve_http, server, host, port)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    verbosity: int = args.verbose
    logging.basicConfig(
        stream=sys.stderr,
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run: Callable[[argparse.Namespace], Any] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        run(args)
    except CliError as exc:
        print(f"yieldmcp: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
