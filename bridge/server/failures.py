"""What a client is told when a tool fails, and what the server's log keeps.

A tool's failure becomes an ``isError`` result whose text the client's model
reads, so it must say what the tool meant to say and nothing else (a prompt's
failure is a JSON-RPC error with the same text: :func:`prompt_failure`):

* a :class:`~runtime.errors.ToolError`'s message goes to the client as is
  (that is what it is for), and so does :class:`~runtime.errors.InvalidArguments`
  (each field of the call's arguments that failed, and why: SEP-1303);
* yieldmcp's own errors (a capability the client lacks, an answer that failed
  validation, a branch limit, an effect the tool misused) say what happened,
  in words yieldmcp wrote, so they go too, as a sentence: "The client did not
  declare the sampling capability, …", never prefixed with a Python class
  name, which means nothing to the model or the person reading it;
* a pydantic validation error inside the tool names the fields that failed,
  not the values;
* any other exception (``RuntimeError("db connect failed: password=...")``,
  a step's ``StepFailed``, which repeats such an exception's message, and
  ``ToolExited``, a ``SystemExit`` or the like the tool raised),
  an ``OSError`` naming a file) may carry secrets or internals: the client
  gets a generic message with an *error id*, and the traceback is logged on
  the server under the same id, so an operator can find it. A store's
  failure (:class:`~bridge.durable.StoreError`) names the store (its host,
  port, user, database): the client is told the store failed, with an error
  id, and the log has the store's words in one line, no traceback (an
  outage is the operator's, and expected). With
  ``Server(debug=True)`` (``yieldmcp serve --debug``) the client is also told
  the exception's type and message, for development ("The tool failed:
  RuntimeError: …").

This is the one place a tool's failure becomes text for the client; the
JSON-RPC errors of requests are :mod:`bridge.jsonrpc.errors`'s.
"""

from __future__ import annotations

import logging
import re
import secrets
from typing import cast

import pydantic

from bridge.durable import StoreError
from bridge.jsonrpc.messages import INTERNAL_ERROR, INVALID_PARAMS
from runtime.errors import (
    CapabilityError,
    InternalError,
    InvalidAnswer,
    InvalidArguments,
    RemoteProtocolError,
    RequestError,
    RequestTimeout,
    StepFailed,
    ToolError,
    ToolExited,
    YieldMCPError,
)

__all__ = ["describe_failure", "prompt_failure", "tool_failure"]

log = logging.getLogger("yieldmcp")


def tool_failure(tool_name: str, exc: BaseException, *, debug: bool = False) -> str:
    """The ``isError`` text for ``tool_name`` failing with ``exc``; an
    unexpected exception is logged with its traceback under an error id."""
    if isinstance(exc, InvalidArguments):
        # The text may quote the caller's values back to it; the log need not.
        fields = sorted({problem.split(":", 1)[0] for problem in exc.problems})
        log.info("tool %s: invalid arguments at %s", tool_name, ", ".join(fields))
        return describe_failure(exc)
    if isinstance(exc, StoreError):
        error_id = secrets.token_hex(6)
        log.warning("tool %s: %s (error id %s)", tool_name, exc, error_id)
        return describe_failure(exc, error_id=error_id, debug=debug)
    if _expected(exc):
        log.info("tool %s failed: %s", tool_name, describe_failure(exc))
        return describe_failure(exc)
    error_id = secrets.token_hex(6)
    log.error("tool %s failed (error id %s)", tool_name, error_id, exc_info=exc)
    return describe_failure(exc, error_id=error_id, debug=debug)


def prompt_failure(name: str, exc: Exception, *, debug: bool = False) -> RequestError:
    """The JSON-RPC error for prompt ``name`` failing with ``exc``, saying what
    a tool's ``isError`` would say: a prompt has no ``isError``. What the
    client caused (a capability it lacks, an answer that fails the form, no
    answer in time) is ``-32602``; the rest ``-32603``, logged as for a tool."""
    text = tool_failure(name, exc, debug=debug)
    client_caused = (
        CapabilityError,
        InvalidAnswer,
        RemoteProtocolError,
        RequestTimeout,
    )
    code = INVALID_PARAMS if isinstance(exc, client_caused) else INTERNAL_ERROR
    return RequestError(code, text)


def _expected(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return all(_expected(e) for e in group.exceptions)
    if isinstance(exc, InternalError | StepFailed | ToolExited):
        return False  # a step's own exception may say anything: as unexpected
    return isinstance(exc, YieldMCPError | pydantic.ValidationError)


def describe_failure(
    exc: BaseException, *, error_id: str | None = None, debug: bool = False
) -> str:
    """A message for the model: what went wrong in the tool, without internals.

    An unexpected exception (see the module doc) is described only by
    ``error_id``, unless ``debug``.
    """
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return "; ".join(
            describe_failure(e, error_id=error_id, debug=debug)
            for e in group.exceptions
        )
    if isinstance(exc, ToolError | InvalidArguments):
        return str(exc)
    if isinstance(exc, StoreError) and not debug:
        where = f" (error id {error_id})" if error_id else ""
        return f"The server's store failed{where}; try again later."
    if isinstance(exc, pydantic.ValidationError):
        fields = sorted(
            {".".join(map(str, e["loc"])) or "<root>" for e in exc.errors()}
        )
        return f"Validation failed for {exc.title}: {', '.join(fields)}"
    if _expected(exc):
        return _sentence(str(exc)) or f"The tool failed: {type(exc).__name__}"
    where = f" (error id {error_id})" if error_id else ""
    if debug:
        return f"The tool failed: {type(exc).__name__}: {exc}{where}"
    return f"The tool failed with an internal error{where}; the server's log has it."


def _sentence(text: str) -> str:
    """``text`` as a sentence: its first word capitalized when it is a plain
    word; a name (``include_context``) or a prefix naming what failed
    (``openai: …``, ``sample: …``) keeps its case."""
    if _PLAIN_WORD.match(text):
        return text[:1].upper() + text[1:]
    return text


_PLAIN_WORD = re.compile(r"[a-z]+ ")  # not "openai:", "sample:", "include_context"
