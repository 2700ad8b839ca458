"""Every exception yieldmcp raises, in one hierarchy.

The root is :class:`YieldMCPError`. One subclass lives elsewhere:
:class:`~runtime.results.SampleValidationError` (``sample_schema`` and
``sample_tools`` ran out of retries) carries the last ``SampleResult``, so it
lives beside that value in :mod:`runtime.results`; this module needs no value
type, and every value module may import it. Definition-time misuse also subclasses
``TypeError`` (or ``ValueError``) so that ordinary ``except TypeError`` code keeps
working. Expected outcomes are *values*, not exceptions: an elicitation that the
user declines is an ``ElicitResult`` with ``action == "decline"``, and a model
answer that fails a schema is a ``SampleResult`` with a ``parse_error``.

Protocol errors follow h11's split: :class:`LocalProtocolError` means *we* tried
something illegal, :class:`RemoteProtocolError` means the peer did. A JSON-RPC
error answered by the peer is a :class:`PeerError` carrying the wire ``code``,
``message`` and ``data``. The one place that maps exceptions onto JSON-RPC error
objects lives in ``bridge``; nothing here knows about the wire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "summarize_validation_error",
    "AuthorizationError",
    "BranchDepthExceeded",
    "BranchTimeout",
    "BrokenSessionError",
    "EffectNeverYielded",
    "CapabilityError",
    "ClosedSessionError",
    "InternalError",
    "InvalidAnswer",
    "InvalidArguments",
    "InvalidEffect",
    "InvalidMessages",
    "InvalidScript",
    "InvalidTool",
    "InvalidToken",
    "JournalExhausted",
    "JournalTooLarge",
    "LimitExceeded",
    "LocalProtocolError",
    "PeerError",
    "PeerUnreachable",
    "ProgressNotIncreasing",
    "ProtocolError",
    "ProviderConfigError",
    "ProviderError",
    "ProviderTimeout",
    "RemoteProtocolError",
    "RequestError",
    "ReplayDivergence",
    "RequestTimeout",
    "ScriptExhausted",
    "ScriptNotUsed",
    "SleepTooLong",
    "StepFailed",
    "StepNotRecordable",
    "TaskCancelled",
    "TokenBudgetExceeded",
    "ToolError",
    "ToolExited",
    "call_failure",
    "exits_the_call_only",
    "UrlElicitationRequired",
    "YieldMCPError",
]


class YieldMCPError(Exception):
    """Root of every exception raised by yieldmcp."""


# --- definition-time and programming errors -----------------------------------------


class InvalidTool(YieldMCPError, TypeError):
    """A tool definition is malformed (caught when the tool is defined)."""


class InvalidEffect(YieldMCPError, TypeError):
    """A tool yielded something that is not an effect, built one wrongly,
    returned an effect or a generator (``yield from`` forgotten), or yielded
    again as its branch closed it (caught ``GeneratorExit``)."""


class EffectNeverYielded(RuntimeWarning):
    """A warning, not an error: a tool made an effect (``ctx.sample("hi")``)
    or an op (``ctx.step(save)``) and never yielded it, so it never happened.
    Issued when the call ends, at the line that made it, as Python warns of a
    coroutine that was never awaited; under ``-W error`` it fails the call
    instead."""


class InvalidMessages(YieldMCPError, ValueError):
    """A conversation handed to ``sample`` breaks the MCP message rules."""


class ProgressNotIncreasing(YieldMCPError, ValueError):
    """A ``progress`` effect did not increase on the previous one of the call."""


class ToolError(YieldMCPError):
    """Raise inside a tool to fail the call with exactly this message.

    Any exception escaping a tool fails the call; this one says the message is
    meant for the caller (it becomes the text of an ``isError`` result verbatim).
    """


class ToolExited(YieldMCPError):
    """A tool, or one of its steps, raised a ``BaseException`` that is no
    ``Exception``: ``SystemExit`` (``sys.exit()`` in a library it calls),
    ``GeneratorExit``, ``asyncio.CancelledError``, or one of its own. It fails
    that call, as any exception does; the server goes on serving the others.
    The exception raised is its ``__cause__``."""

    @classmethod
    def of(cls, raised: BaseException) -> ToolExited:
        exited = cls(f"the tool raised {type(raised).__name__}: {raised}".rstrip(": "))
        exited.__cause__ = raised
        return exited


def exits_the_call_only(raised: BaseException) -> bool:
    """Whether ``raised``, from a tool's code, fails only its call
    (:class:`ToolExited`): a ``BaseException`` that is no ``Exception``, no
    ``KeyboardInterrupt`` (Ctrl-C, raised in whatever code runs when it
    comes: it stops the process) and no exception group (whose members say
    what they are). Trio's ``Cancelled`` is left to whoever can see it."""
    return not isinstance(raised, Exception | KeyboardInterrupt | BaseExceptionGroup)


def call_failure(raised: BaseException) -> Exception:
    """What ``raised``, from a tool's code, fails its call with: itself, or
    :class:`ToolExited` for a ``BaseException`` that fails only the call;
    anything else (Ctrl-C, a group) is raised again."""
    if isinstance(raised, Exception):
        return raised
    if exits_the_call_only(raised):
        return ToolExited.of(raised)
    raise raised


# --- steps and replay ---------------------------------------------------------------


class StepFailed(YieldMCPError):
    """A step's function raised (after its retries). The failure is recorded, so
    a replay raises this again, with the same ``type_name`` and ``message``,
    without running the function: the replayed call takes the same path.

    The live exception is chained as ``__cause__`` the first time only.
    """

    def __init__(self, step: str, type_name: str, message: str) -> None:
        super().__init__(f"step {step!r} failed: {type_name}: {message}")
        self.step = step
        self.type_name = type_name
        self.message = message


class StepNotRecordable(YieldMCPError, TypeError):
    """A step returned a value its return annotation cannot store as JSON.

    Raised at the step when it first runs (never at a replay); nothing is
    recorded, so fix the annotation or the value.
    """


class ReplayDivergence(YieldMCPError):
    """A replay met a journal entry that does not match what the tool asks now.

    The tool's code changed between rounds, or it is not deterministic between
    its yields. ``key`` is the effect key, ``recorded`` what the journal holds
    there and ``asked`` what the tool yielded this time.
    """

    def __init__(self, key: str, recorded: str, asked: str) -> None:
        super().__init__(
            f"replay diverged at key {key!r}: the journal recorded {recorded}, "
            f"the tool now asks {asked}; the tool's code changed since the "
            f"call was recorded, or its code between yields is not "
            f"deterministic (put side effects and I/O in ctx.step)"
        )
        self.key = key
        self.recorded = recorded
        self.asked = asked


@final
class JournalExhausted(ReplayDivergence):
    """A replay reached a question its journal does not record: the journal
    ends before the tool does (it was taken while the call was in flight, or
    the tool now asks more than it did). ``asked`` says what the tool asks
    next, at ``key``; ``recorded`` is ``"nothing"``."""

    def __init__(self, key: str, asked: str) -> None:
        YieldMCPError.__init__(
            self,
            f"the journal ends before the tool does: at key {key!r} the tool "
            f"asks {asked}, which the journal does not record",
        )
        self.key = key
        self.recorded = "nothing"
        self.asked = asked


@final
class JournalTooLarge(YieldMCPError):
    """A multi-round call's journal grew past the server's cap
    (``ServerLimits.max_journal_bytes``); the call fails with this message."""


@final
class SleepTooLong(YieldMCPError):
    """A ``ctx.sleep`` longer than a 2026-07-28 request may hold, in a tool
    that cannot run as a task (``ServerLimits.max_request_sleep``): raised
    at the sleep's yield, it fails the call with this message. (A tool that
    can be a task gets a :class:`CapabilityError` naming the tasks
    extension instead.)"""


class InvalidArguments(YieldMCPError, ValueError):
    """A call's arguments fail the tool's input schema.

    A server answers it as a tool execution error (``isError: true``, SEP-1303),
    not a JSON-RPC error, so the model that made the call reads what to fix.
    ``problems`` holds one ``"field: what is wrong"`` line per field.
    """

    def __init__(self, tool: str, problems: tuple[str, ...]) -> None:
        lines = "\n".join(problems)
        super().__init__(f"Invalid arguments for tool {tool!r}:\n{lines}")
        self.tool = tool
        self.problems = problems


# --- answers and limits -------------------------------------------------------------


class InvalidAnswer(YieldMCPError, ValueError):
    """An answer to an effect failed validation (e.g. elicited content vs. model).

    Raised into the tool at the ``yield`` that asked the question; the tool may
    catch it. Model output that fails a ``schema`` never raises this: it comes
    back as ``SampleResult.parse_error`` instead.
    """


class LimitExceeded(YieldMCPError):
    """A ``branch`` limit was exceeded; the branch's children were cancelled."""

    def __init__(self, message: str, *, branch_key: str) -> None:
        super().__init__(message)
        self.branch_key = branch_key


@final
class BranchDepthExceeded(LimitExceeded):
    """A ``branch`` would nest deeper than its ``Limits.max_depth`` allows."""


@final
class TokenBudgetExceeded(LimitExceeded):
    """The samples inside a ``branch`` used more than ``Limits.max_tokens``."""


@final
class BranchTimeout(LimitExceeded):
    """A ``branch`` ran longer than ``Limits.timeout`` seconds."""


# --- peers and sessions -------------------------------------------------------------


class ProtocolError(YieldMCPError):
    """A protocol rule was broken. Abstract: raise a Local or Remote subclass."""

    def __init__(self, *args: object) -> None:
        if type(self) is ProtocolError:
            raise TypeError(
                "ProtocolError is abstract; raise LocalProtocolError (we broke a "
                "rule) or RemoteProtocolError (the peer did)"
            )
        super().__init__(*args)


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol forbids."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids."""


class PeerError(YieldMCPError):
    """The peer answered a request with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"peer error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class RequestError(YieldMCPError):
    """Answer the request being handled with this JSON-RPC error.

    Raise it from a request handler (or a tool, for errors the protocol defines
    as request failures rather than tool errors) to choose the wire ``code``,
    ``message`` and ``data`` exactly.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class UrlElicitationRequired(YieldMCPError):
    """A tool cannot go on until the user completes these URL elicitations.

    Raised from a tool, it fails the call with JSON-RPC error ``-32042``
    (2025-11-25) listing ``elicitations`` (``ElicitUrl`` effects), so the client
    can send the user there and retry the call. In 2026-07-28, where that code
    is retired, the same flows go out as the ``inputRequests`` of an
    ``input_required`` result, and the client's retry runs the call afresh.
    """

    def __init__(self, elicitations: list[Any], message: str | None = None) -> None:
        super().__init__(message or "This request requires completing a URL flow.")
        self.elicitations = elicitations


class CapabilityError(YieldMCPError):
    """The peer did not declare a capability this request needs."""

    def __init__(self, message: str, *, required: dict[str, Any]) -> None:
        super().__init__(message)
        self.required = required


class RequestTimeout(YieldMCPError, TimeoutError):
    """A request we sent was not answered in time (and was cancelled)."""


class ProviderTimeout(RequestTimeout):
    """A model provider did not answer in time: no byte within a network
    step's timeout, or no whole answer within its deadline. ``provider``
    names the API, as in :class:`ProviderError`."""

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider


class TaskCancelled(YieldMCPError):
    """A task we followed (the 2026-07-28 tasks extension) ended ``cancelled``."""


class ClosedSessionError(YieldMCPError):
    """*We* closed the session; it cannot be used any more."""


class BrokenSessionError(YieldMCPError):
    """The peer or the transport broke the session (EOF, disconnect, crash)."""


class PeerUnreachable(BrokenSessionError):
    """The peer was never reached: nothing listens at its address, its name
    does not resolve, or the connection was refused. A session that had
    reached its peer and then lost it raises :class:`BrokenSessionError`."""


class ScriptExhausted(YieldMCPError, LookupError):
    """A scripted test peer was asked a question it has no answer for."""


class InvalidScript(YieldMCPError, TypeError):
    """A ``ScriptedPeer`` was given a script it cannot read: ``elicits`` or
    ``steps`` that is not a mapping by name."""


class ScriptNotUsed(UserWarning):
    """A warning, not an error: a ``run_scripted`` call ran a step its
    ``ScriptedPeer`` does not stub (or asked a form it has no answers for)
    while the script names steps (forms) no call has asked for:
    ``steps={"charge_crad": ...}`` for the step ``charge_card``, which then
    ran its own function. Issued when the call ends, naming the unused names
    and the close one the call asked for; under ``-W error`` (pytest's
    ``filterwarnings = ["error"]``) it fails the call instead. A warning,
    since one peer may script several calls."""


class ProviderError(YieldMCPError):
    """A model provider's HTTP API refused or failed a request.

    ``provider`` names the API (``"openai"``, ``"anthropic"``, ...); ``status`` is
    the HTTP status when there was one (``None`` for a failure reported inside a
    successful response or stream, or a broken connection); ``code`` is the
    provider's own error code or type when it sent one. The message never
    contains the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status = status
        self.code = code


class ProviderConfigError(YieldMCPError, ValueError):
    """A provider spec or its environment is unusable (unknown prefix, no key)."""


class InvalidToken(YieldMCPError):
    """A server refused an access token: malformed, badly signed, expired, not
    yet valid, from another issuer or for another audience, or inactive.

    The message says which (for the server's log and the ``error_description``
    of the 401); it never contains the token.
    """


class AuthorizationError(YieldMCPError):
    """A client could not obtain authorization to call a server: discovery,
    registration, the user's consent or the token request failed, or the
    server still refused after re-authorizing. The message never contains a
    token, code or secret."""


class InternalError(YieldMCPError):
    """A bug in yieldmcp itself; please report it with the traceback."""


def summarize_validation_error(exc: ValidationError, limit: int = 3) -> str:
    """pydantic's errors in one short line, for messages that name what is wrong.

    Union branches whose ``type`` tag did not match are dropped, so the error
    in the branch that applies is the one shown; inputs are never included
    (they may be elicited content or a model's output).
    """
    errors = exc.errors(include_url=False, include_input=False)
    wrong = [
        e["loc"][:-1]
        for e in errors
        if e["loc"][-1:] == ("type",) and e["type"] == "literal_error"
    ]
    kept = [e for e in errors if not any(e["loc"][: len(w)] == w for w in wrong)]
    shown = kept or errors
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
        for e in shown[:limit]
    ]
    more = f" (and {len(shown) - limit} more)" if len(shown) > limit else ""
    return "; ".join(parts) + more
