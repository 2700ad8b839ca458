"""The terminal host behind ``yieldmcp call`` and ``yieldmcp demo``.

It connects to a server (a command it spawns, or a URL), answers sampling with
a provider (the built-in offline model unless ``--model`` names a real one) and
elicitation at the terminal (or from scripted answers), and shows what the
tool reports as it runs: log messages and progress. It owns presentation and
exit codes; the protocol work is :mod:`bridge.client`'s.

Every text a peer chose (results, logs, progress, listings, errors) is
printed through :func:`~bridge.elicit.printable`, without its terminal
control sequences. What is one line (a log's level, a progress message, a
structured field's name, an error's message) is shown on one line
(:func:`~bridge.elicit.printable_line`) and cut: a line break in it would
print a line of the server's as one of ours. A notice's text that keeps its
lines (a log's data, a tool error) has every line after the first indented.
``--json`` prints the exact JSON, every control character in it escaped, and
only JSON: a ``NaN`` or ``Infinity`` the server sent (Python's parser reads
them) is refused, in one line (:func:`json_text`).
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO, cast, final

import attrs
import trio

from bridge.client.client import connect
from bridge.client.output_schemas import InvalidStructuredContent
from bridge.client.tasks import TASKS_EXTENSION
from bridge.elicit import (
    MAX_LINE_SHOWN,
    ElicitationHandler,
    ScriptedAnswers,
    TerminalForm,
    cut,
    printable,
    printable_line,
)
from bridge.jsonrpc.messages import INVALID_PARAMS
from bridge.providers import DEFAULT_DEADLINE, MAX_ANSWER, provider_from_spec
from bridge.transports.headers import MISSING_CAPABILITY
from runtime.codec import ELICITS_META_KEY, server_models
from runtime.errors import (
    AuthorizationError,
    BrokenSessionError,
    PeerError,
    PeerUnreachable,
    ProviderConfigError,
    ProviderError,
    ProviderTimeout,
    RemoteProtocolError,
    RequestTimeout,
    ScriptExhausted,
    YieldMCPError,
)
from runtime.messages import Text
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest

from .feedback import ERASE_LINE, WaitingSampler, progress_text
from .host_options import (
    INTERNAL_PATIENCE,
    MAX_LISTING,
    MAX_MESSAGE,
    MAX_QUESTIONS,
    shown,
)
from .show import MediaFolder, describe_tool, offer_json, offer_lines, result_lines
from .task_options import created_printer, status_printer, unreachable_printer
from .url_flow import (
    MAX_URL_ROUNDS,
    URL_REQUIRED,
    UrlStepRefused,
    complete_url_steps,
)

__all__ = [
    "CallOptions",
    "Display",
    "HostError",
    "failure_text",
    "host_parts",
    "json_text",
    "report_unused",
    "run_call",
]


class HostError(Exception):
    """A failure to report as one line (exit code 1)."""


@final
@attrs.frozen(kw_only=True)
class CallOptions:
    target: str | Sequence[str]
    tool: str | None
    arguments: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    model: str = "offline"
    model_timeout: float | None = DEFAULT_DEADLINE  # one answer, retries included
    model_max_answer: int = MAX_ANSWER  # bytes of one answer of the model
    answers: ScriptedAnswers | None = None
    json_output: bool = False
    era: str = "auto"
    auth: Any = None  # an OAuth for an http(s) target: used if the server asks
    connect_timeout: float | None = 10.0  # each handshake request
    timeout: float | None = None  # the whole call, connecting included
    describe: bool = False  # show the tool's schemas instead of calling it
    save_media: MediaFolder | None = None  # where images and audio of a result go
    task: bool = False  # call --task (bridge.cli.task_options)
    validate_output: bool = True  # structuredContent against outputSchema
    max_message: int = MAX_MESSAGE  # bytes of one message from the server
    max_listing: int = MAX_LISTING  # characters of one paginated list, in all
    max_questions: int = MAX_QUESTIONS  # of one round; open at once in 2025
    internal_patience: float = INTERNAL_PATIENCE  # a task's server answering -32603


@final
class _Scripted:
    """Scripted answers; a form with no answer left is cancelled, and said so."""

    def __init__(self, script: ScriptedAnswers, out: TextIO) -> None:
        self.script = script
        self.out = out

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        try:
            return await self.script.handle(request)
        except ScriptExhausted:
            key = printable_line(repr(request.key), most=MAX_NAME_SHOWN)
            print(f"  (no scripted answer left for {key}: cancelling)", file=self.out)
            return ElicitReply(action="cancel")


def describe_model(spec: str) -> str:
    """How the model is labelled on screen."""
    if spec.split(":", 1)[0] == "offline":
        return f"{spec} (the built-in offline model: no API key, no network)"
    return spec


async def run_call(options: CallOptions, *, out: TextIO | None = None) -> int:
    """Run one ``yieldmcp call``; the exit code. ``out``: stdout unless given
    (the one of the moment, not the one when this module was imported)."""
    stream: TextIO = sys.stdout if out is None else out
    if options.timeout is None:
        return await _run_call(options, stream)
    with trio.move_on_after(options.timeout):
        return await _run_call(options, stream)
    raise HostError(f"no result within {options.timeout:g} s (--timeout)")


def host_parts(
    options: CallOptions, out: TextIO
) -> tuple[ElicitationHandler, WaitingSampler, Display]:
    """Who answers forms (the terminal, or the scripted answers), who answers
    sampling (the model, behind a spinner), and what shows the call."""
    try:
        provider = provider_from_spec(
            options.model,
            deadline=options.model_timeout,
            max_answer=options.model_max_answer,
        )
    except ProviderConfigError as exc:
        raise HostError(str(exc)) from None
    handler: ElicitationHandler = (
        _Scripted(options.answers, out)
        if options.answers is not None
        # With --json, stdout carries the JSON only: forms go to stderr.
        else TerminalForm(out=sys.stderr if options.json_output else out)
    )
    show = Display(out, quiet=options.json_output)
    # On a terminal, a spinner says who is thinking (nothing when piped). The
    # model is named when it is first asked: a call that never samples here
    # (none in the tool, or the server's own model answers) names none. The
    # server's own models are named by its result (Display.result).
    sampler = WaitingSampler(
        provider,
        options.model,
        on_first=lambda: show.line(f"model: {describe_model(options.model)}"),
    )
    return handler, sampler, show


def failure_text(exc: OSError | YieldMCPError, era: str) -> str:
    """What the terminal host says of a failure, as one line."""
    if isinstance(exc, ProviderTimeout):
        return f"the model did not answer: {_provider_failure(exc)} (--model-timeout)"
    if isinstance(exc, RequestTimeout):
        return _unanswered(exc, era)
    if isinstance(exc, OSError):
        return f"cannot start the server: {exc}"
    if isinstance(exc, AuthorizationError):
        return f"authorization failed: {exc}"
    if isinstance(exc, PeerUnreachable):
        return str(exc)  # "cannot reach the MCP server at …": never "went away"
    if isinstance(exc, BrokenSessionError):
        return f"the server went away: {exc}"
    if isinstance(exc, PeerError):
        return _refused(exc, era)
    if isinstance(exc, InvalidStructuredContent):
        return f"the server broke the protocol: {exc} (--no-validate-output accepts it)"
    if isinstance(exc, RemoteProtocolError):
        return f"the server broke the protocol: {exc}"
    if isinstance(exc, ProviderError):
        return _provider_failure(exc)
    return str(exc)  # anything else: still one line, no traceback


async def _run_call(options: CallOptions, out: TextIO) -> int:
    handler, sampler, show = host_parts(options, out)
    remote = isinstance(options.target, str) and "://" in options.target
    try:
        async with connect(
            options.target,
            era=options.era,  # type: ignore[arg-type]
            sampler=sampler,
            elicitation=handler,
            on_log=show.log,
            auth=options.auth if remote else None,
            connect_timeout=options.connect_timeout,
            validate_output=options.validate_output,
            max_message=options.max_message,
            max_listing=options.max_listing,
            max_questions=options.max_questions,
            internal_patience=options.internal_patience,
        ) as client:
            if options.tool is None:
                return await _list(client, out, json_output=options.json_output)
            if options.describe:
                return await _describe(client, options.tool, out)
            told: list[str] = []
            if options.answers is not None or options.arguments:
                # One listing for both checks; the client keeps the output
                # schemas it names for the call's result.
                tools: list[dict[str, Any]] = await client.list_tools()
                _check_argument_keys(tools, options.tool, options.arguments)
                if options.answers is not None:
                    told = _check_answer_keys(tools, options.tool, options.answers)
            result = await _call_tool(client, options, handler, show, out)
    except (OSError, YieldMCPError) as exc:
        raise HostError(failure_text(exc, options.era)) from None
    _report_unused(options.answers, told)
    return show.result(
        result, json_output=options.json_output, save_media=options.save_media
    )


def report_unused(answers: ScriptedAnswers | None) -> None:
    """After a call: the answer keys no form asked for (usually a typo)."""
    _report_unused(answers, [])


async def _list(client: Any, out: TextIO, *, json_output: bool = False) -> int:
    """Everything the server offers; resources and prompts when it has them.
    With ``json_output``, as JSON (each tool with its schemas)."""
    offered: Any = client.server_capabilities
    resources: list[Any] = []
    templates: list[Any] = []
    prompts: list[Any] = []
    if "resources" in offered:
        resources = await client.list_all("resources/list", "resources")
        templates = await client.list_all(
            "resources/templates/list", "resourceTemplates"
        )
    if "prompts" in offered:
        prompts = await client.list_all("prompts/list", "prompts")
    tools: list[Any] = await client.list_tools() if "tools" in offered else []
    if json_output:
        print(json_text(offer_json(tools, resources, templates, prompts)), file=out)
        return 0
    for line in offer_lines(tools, resources, templates, prompts):
        print(printable(line), file=out)
    return 0


async def _describe(client: Any, name: str, out: TextIO) -> int:
    tools: list[dict[str, Any]] = await client.list_tools()
    tool = _named(tools, name)
    if tool is None:
        names = [str(t.get("name")) for t in tools]
        raise HostError(
            f"the server has no tool {name!r} ({did_you_mean(name, names)})"
        )
    for line in describe_tool(tool):
        print(printable(line), file=out)
    return 0


def _named(tools: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The tool called ``name`` in a listing, if it is there."""
    return next((tool for tool in tools if tool.get("name") == name), None)


def _check_argument_keys(
    tools: list[dict[str, Any]], name: str, arguments: Mapping[str, Any] | None
) -> None:
    """Before the call: the ``--arg``/``--args`` keys tool ``name``'s
    ``inputSchema`` does not name, said (a typo would otherwise be dropped
    or refused with no word of it). Said only of a schema that names its
    properties; the call still goes ahead, since a schema may allow more."""
    tool = _named(tools, name)
    schema: Any = None if tool is None else tool.get("inputSchema")
    properties: Any = (
        cast("dict[str, Any]", schema).get("properties")
        if isinstance(schema, dict)
        else None
    )
    if not arguments or not isinstance(properties, dict):
        return
    named = [str(key) for key in cast("dict[Any, Any]", properties)]
    for key in arguments:
        if key in named:
            continue
        close = difflib.get_close_matches(key, named, n=1)
        hint = (
            f"did you mean {some_names(close)}?"
            if close
            else f"its arguments: {some_names(named)}"
        )
        print(
            printable_line(
                f"yieldmcp: warning: {shown(name)} has no argument {shown(key)}; {hint}"
            ),
            file=sys.stderr,
        )


def _check_answer_keys(
    tools: list[dict[str, Any]], name: str, answers: ScriptedAnswers
) -> list[str]:
    """Before the call: the answer keys no form of tool ``name`` can ask,
    said, and returned. Only a yieldmcp tool lists its forms (``_meta``);
    another server's keys are known when it asks (:func:`_report_unused`)."""
    tool = _named(tools, name)
    meta: Any = None if tool is None else tool.get("_meta")
    forms: Any = (
        cast("dict[str, Any]", meta).get(ELICITS_META_KEY)
        if isinstance(meta, dict)
        else None
    )
    if not isinstance(forms, list):
        return []
    declared = [str(form) for form in cast("list[Any]", forms)]
    unknown = [key for key in answers.form_keys() if key not in declared]
    if unknown:
        print(
            printable_line(
                f"yieldmcp: warning: {shown(name)} has no form "
                f"{', '.join(map(shown, unknown))} (its forms: {some_names(declared)})"
            ),
            file=sys.stderr,
        )
    return unknown


def _report_unused(answers: ScriptedAnswers | None, told: Sequence[str]) -> None:
    """Answer keys never asked for, not already told: usually a typo."""
    if answers is None:
        return
    unused = [key for key in answers.unused_keys() if key not in told]
    asked = answers.asked_keys()
    if unused:
        print(
            printable_line(
                f"yieldmcp: warning: no form asked for answer key(s) "
                f"{', '.join(map(shown, unused))} "
                f"(keys asked: {some_names(asked)}); "
                f'another server\'s forms go by the key it chose, and "*" '
                f"answers any form with no key of its own"
            ),
            file=sys.stderr,
        )


async def _call_tool(
    client: Any, options: CallOptions, handler: Any, show: Any, out: TextIO
) -> Any:
    """Call the tool; after a ``-32042``, take the user through its URLs, retry."""
    for _round in range(MAX_URL_ROUNDS):
        try:
            result = await client.call_tool(
                options.tool,
                options.arguments,
                on_progress=show.progress,
                task=options.task,
                on_status=status_printer(show.line),
                on_task_created=created_printer(sys.stderr),
                on_unreachable=unreachable_printer(sys.stderr),
            )
        except PeerError as exc:
            if exc.code == INVALID_PARAMS and exc.message.startswith("Unknown tool"):
                text = await _with_suggestion(client, str(options.tool), exc.message)
                raise HostError(f"the server refused: {text} ({exc.code})") from None
            if exc.code != URL_REQUIRED:
                raise
            forms_out = sys.stderr if options.json_output else out
            try:
                await complete_url_steps(exc, handler, forms_out)
            except UrlStepRefused as refused:
                raise HostError(str(refused)) from None
        else:
            unknown = _unknown_tool_text(result)
            if unknown is not None and not options.json_output:
                text = await _with_suggestion(client, str(options.tool), unknown)
                raise HostError(f"tool error: {_said(text)}")
            return result
    raise HostError(
        f"the server still asked for URL steps after {MAX_URL_ROUNDS} rounds"
    )


async def _with_suggestion(client: Any, name: str, message: str) -> str:
    """A server's "unknown tool" message, with the name most like ``name``
    from its listing (unless the message already offers one)."""
    if "did you mean" in message:
        return message
    tools: list[dict[str, Any]] = await client.list_tools()
    names = [str(tool.get("name")) for tool in tools]
    if name in names:  # the tool is there: the message is about something else
        return message
    return f"{message}; {did_you_mean(name, names)}"


def _unknown_tool_text(result: Any) -> str | None:
    """The text of a tool error saying the tool is unknown (the official
    SDK's way: a tool error, not a -32602), else ``None``."""
    if not result.is_error:
        return None
    texts = [block.text for block in result.content if isinstance(block, Text)]
    if len(texts) == 1 and texts[0].startswith("Unknown tool"):
        return texts[0]
    return None


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """``did you mean X?`` for the closest of ``names``, else what there is."""
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"did you mean {some_names(close)}?"
    return f"its tools: {some_names(names)}"


MAX_LOG_SHOWN = 4096
"""Characters of one log notice a server sends that the terminal shows (of
its data; of a progress notice, its message)."""

MAX_NAMES_SHOWN = 12
MAX_NAME_SHOWN = 64


def some_names(names: Sequence[str]) -> str:
    """``names`` for one line of the terminal: a server's names are its to
    choose, so at most :data:`MAX_NAMES_SHOWN` of them, each cut to
    :data:`MAX_NAME_SHOWN` characters."""
    shown = [
        name if len(name) <= MAX_NAME_SHOWN else name[: MAX_NAME_SHOWN - 1] + "\u2026"
        for name in names[:MAX_NAMES_SHOWN]
    ]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "") or "none"


def _unanswered(exc: RequestTimeout, era: str) -> str:
    """A handshake request that got no reply within --connect-timeout."""
    text = f"the server did not answer: {exc} (--connect-timeout)"
    if era == "auto" and str(exc).startswith("server/discover"):
        # Some servers ignore a method they do not know instead of refusing
        # it; initialize on the same connection would follow a late answer.
        text += "; a server that ignores server/discover needs --era legacy"
    return text


def _said(message: str) -> str:
    """A server's message quoted in one of our lines: one line, cut."""
    return printable_line(message, most=MAX_LINE_SHOWN)


def _refused(exc: PeerError, era: str) -> str:
    text = f"the server refused: {_said(exc.message)} ({exc.code})"
    if era != "legacy" and "back-channel" in exc.message:
        # An SDK or fastmcp tool asking the 2025-11-25 way, mid-call, which a
        # 2026-07-28 request has no channel for: the handshake era has one.
        text += "; its tool asks mid-call the 2025-11-25 way: try --era legacy"
    if exc.code == MISSING_CAPABILITY and _needs_tasks(exc.data):
        text += "; the tool runs only as a task: add --task"
    return text


def _needs_tasks(data: object) -> bool:
    """Whether a -32021's data names the tasks extension as required."""
    try:
        return (
            TASKS_EXTENSION in cast("Any", data)["requiredCapabilities"]["extensions"]
        )
    except (TypeError, KeyError):  # not the shape the spec gives: no hint
        return False


def _provider_failure(exc: ProviderError | ProviderTimeout) -> str:
    """The provider's error, its name said once (not ``ollama: ... ollama``)."""
    text = str(exc)
    rest = text.removeprefix(f"{exc.provider}: ")
    return rest if exc.provider in rest else text


@final
class Display:
    """What the terminal host prints: lines, logs, progress, the result."""

    def __init__(self, out: TextIO, *, quiet: bool) -> None:
        self.out = out
        self.quiet = quiet
        # A notice can arrive while the spinner shows: erase it first, so the
        # notice starts at the left edge (the spinner redraws below it).
        self.erase = ERASE_LINE if _is_terminal(out) else ""

    def line(self, text: str) -> None:
        """One line: a line break in ``text`` is a space (see the module doc)."""
        if not self.quiet:
            print(f"{self.erase}{printable_line(text)}", file=self.out, flush=True)

    def log(self, level: str, data: Any, logger: str | None) -> None:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        text = cut(text, MAX_LOG_SHOWN)  # a notice, not the result: shown in part
        # Cleaned before it is split: str.splitlines breaks at \r and \x1c too.
        first, *rest = printable(text).splitlines() or [""]
        # The level is a name ("info"): one line, cut like one.
        self.line(f"[{printable_line(level, most=MAX_NAME_SHOWN)}] {first}")
        for row in rest:
            self.line(f"    {row}")

    def progress(self, value: float, total: float | None, message: str | None) -> None:
        bar = _is_terminal(self.out)
        self.line(progress_text(value, total, message, bar=bar, most=MAX_LOG_SHOWN))

    def result(
        self, result: Any, *, json_output: bool, save_media: MediaFolder | None = None
    ) -> int:
        self.server_models(result)
        if json_output:
            payload = {
                "content": [_block_json(b) for b in result.content],
                "structuredContent": result.structured_content,
                "isError": result.is_error,
            }
            print(json_text(payload), file=self.out)
        elif result.is_error:
            # On stderr, where our own errors go: the first line after ours,
            # the rest indented, so none can pass for a "yieldmcp: error:".
            first, *rest = result_lines(result.content, save_media) or [""]
            lines = [f"tool error: {first}", *(f"    {row}" for row in rest)]
            print(printable("\n".join(lines)), file=sys.stderr)
        else:
            print(printable("\n".join(_readable(result, save_media))), file=self.out)
        if save_media is not None and save_media.failed:
            return 1  # the result is shown, and says which file was not saved
        return 1 if result.is_error else 0

    def server_models(self, result: Any) -> None:
        """``model: …`` for the models of its own the server says answered
        the call's samples (the client saw no request for them); nothing if
        none did. The names are the server's words: one line, cleaned."""
        names = server_models(result.meta)
        if names:
            shown = ", ".join(printable_line(name) for name in names)
            whose = "the server's own model" + ("s" if len(names) > 1 else "")
            self.line(f"model: {shown} ({whose})")


_JSON_ESCAPES = {
    code: f"\\u{code:04x}"
    for code in (*range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}
"""DEL, the C1 controls and the bidi embeddings, overrides and isolates,
which ``json.dumps`` leaves raw with ``ensure_ascii=False``, as JSON escapes:
the same JSON, exactly, and nothing a terminal would obey or draw out of
order (it already escapes the C0 controls)."""


def json_text(value: Any) -> str:
    """``value`` as indented JSON, nothing in it a terminal would obey.

    Strict JSON only (RFC 8259), as the command line reads it
    (:func:`~bridge.cli.host_options.strict_json`): a ``NaN``, ``Infinity``
    or ``-Infinity`` the server sent (or ``1e400``, read as infinity) is the
    server's mistake, refused rather than printed as text no JSON parser
    reads.

    Raises:
        HostError: ``value`` holds such a number.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)
    except ValueError:  # out of range float values are not JSON compliant
        raise HostError(
            "the server broke the protocol: its answer holds NaN or Infinity, "
            "which JSON has not (without --json it is shown)"
        ) from None
    return text.translate(_JSON_ESCAPES)


def _block_json(block: Any) -> Any:
    from runtime import codec
    from runtime.messages import Audio, Image, Text

    if isinstance(block, Text | Image | Audio):
        return codec.block_to_json(block)
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)


def _readable(result: Any, save_media: MediaFolder | None) -> list[str]:
    """The structured content as fields (else every block), and any media.
    A value wrapped in ``{"result": …}`` (a ``str``, a number, a list: the
    official SDK's way, and ours) is shown by its text blocks, which say it
    plainly, not as one field named ``result``."""
    structured = result.structured_content
    if not isinstance(structured, dict) or (
        list(structured) == ["result"]  # pyright: ignore[reportUnknownArgumentType]
        and any(isinstance(b, Text) for b in result.content)
    ):
        return result_lines(result.content, save_media)
    lines: list[str] = []
    for key, value in structured.items():  # pyright: ignore[reportUnknownVariableType]
        name = printable_line(str(key), most=MAX_LINE_SHOWN)  # pyright: ignore[reportUnknownArgumentType]
        rows = printable(value).splitlines() if isinstance(value, str) else []
        if len(rows) > 1:
            lines.append(f"{name}:")
            lines.extend(f"    {row}" for row in rows)
        else:  # the result: shown whole, on one line
            lines.append(f"{name}: {printable_line(str(value))}")  # pyright: ignore[reportUnknownArgumentType]
    # The text blocks repeat the structured content; other blocks do not.
    others = [b for b in result.content if not isinstance(b, Text)]
    return lines + result_lines(others, save_media)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
