"""What ``yieldmcp call`` prints: a server's offer, a tool's schemas, a result.

* The listing (``call SERVER``): each tool as a signature made from its
  input schema (``add(a: int, b: int = 1)``) with its description, then the
  resources, resource templates and prompts, when the server has any; with
  ``--json``, all of it as the server sent it (:func:`offer_json`).
* ``--describe``: a tool's input schema as the form a person would fill in
  (each field by its ``--arg`` name), and its output schema.
* A result: every content block. Text blocks one after another, each on its
  own lines; an image or audio as ``[image image/png, 4.2 KB]`` (written to a
  file with ``--save-media DIR``: :class:`MediaFolder`); a resource link as
  ``name <uri>``; an embedded resource by its URI, with its text.

A peer's text is split into lines only once it is
:func:`~bridge.elicit.printable` (``str.splitlines`` also breaks at ``\r``
and other controls), and the caller prints every line through it as well.
What is one line is shown on one line, cut at
:data:`~bridge.elicit.MAX_LINE_SHOWN` characters (:func:`_one`): a name, a
title, a URI, a MIME type, a property's type or default. A line break in it
would print a line the server wrote as one of ours (``yieldmcp: error:
...``). Text that keeps its lines is indented under a line of ours (a
description under ``--describe``, an embedded resource's text), except a
result's text blocks: they are the output, printed as the tool wrote them,
last, after every notice.
"""

from __future__ import annotations

import base64
import binascii
import errno
import json
import mimetypes
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

from bridge.elicit import MAX_LINE_SHOWN, describe_form, printable, printable_line
from runtime.messages import Audio, Image, Text

__all__ = [
    "MediaFolder",
    "describe_tool",
    "offer_json",
    "offer_lines",
    "result_lines",
    "tool_signature",
]


def offer_lines(
    tools: Sequence[Mapping[str, Any]],
    resources: Sequence[Mapping[str, Any]] = (),
    templates: Sequence[Mapping[str, Any]] = (),
    prompts: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """The listing: tools first (``name(params): description``), then the rest.
    An item that is not a JSON object is left out (the server's mistake)."""
    tools, resources, templates, prompts = (
        _objects(tools),
        _objects(resources),
        _objects(templates),
        _objects(prompts),
    )
    lines = [_named(tool_signature(tool), tool) for tool in tools]
    sections = (
        ("resources", [_named(_located(r, "uri"), r) for r in resources]),
        (
            "resource templates",
            [_named(_located(t, "uriTemplate"), t) for t in templates],
        ),
        ("prompts", [_named(_prompt_call(p), p) for p in prompts]),
    )
    for title, rows in sections:
        if rows:
            if lines:
                lines.append("")
            lines.append(f"{title}:")
            lines.extend(f"  {row}" for row in rows)
    return lines or ["(the server offers no tools, resources or prompts)"]


def offer_json(
    tools: Sequence[Mapping[str, Any]],
    resources: Sequence[Mapping[str, Any]] = (),
    templates: Sequence[Mapping[str, Any]] = (),
    prompts: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The listing for ``--json``: each list as the server sent it (a tool
    with its ``inputSchema``, and its ``outputSchema`` when it has one)."""
    return {
        "tools": list(tools),
        "resources": list(resources),
        "resourceTemplates": list(templates),
        "prompts": list(prompts),
    }


def tool_signature(tool: Mapping[str, Any]) -> str:
    """``name(a: int, b: str = "x", c?: bool)`` from the tool's input schema:
    each property with its type, its default when it has one, and ``?`` when
    it is optional without one. One line: each of the server's words in it
    (:func:`_one`)."""
    schema = _mapping(tool.get("inputSchema"))
    properties = _mapping(schema.get("properties"))
    required = schema.get("required")
    needed: set[Any] = set(
        cast(list[Any], required) if isinstance(required, list) else ()
    )
    shown: list[str] = []
    for key, value in properties.items():
        field = _mapping(value)
        name, kind = _one(key), _one(_type_name(field))
        if "default" in field:
            shown.append(f"{name}: {kind} = {_one(_python_literal(field['default']))}")
        elif key in needed:
            shown.append(f"{name}: {kind}")
        else:
            shown.append(f"{name}?: {kind}")
    return f"{_one(tool.get('name'))}({', '.join(shown)})"


def _one(text: object) -> str:
    """A server's word shown on one line: its line breaks are spaces, cut at
    :data:`~bridge.elicit.MAX_LINE_SHOWN` characters."""
    return printable_line(str(text), most=MAX_LINE_SHOWN)


def _objects(items: Sequence[Any]) -> list[Mapping[str, Any]]:
    return [cast(Mapping[str, Any], item) for item in items if isinstance(item, dict)]


def _mapping(value: object) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, dict) else {}


_SCALARS = {
    "integer": "int",
    "number": "float",
    "string": "str",
    "boolean": "bool",
    "null": "None",
    "object": "dict",
    "array": "list",
}


def _type_name(field: Mapping[str, Any], depth: int = 0) -> str:
    """A JSON Schema as a Python annotation, as far as one reads plainly."""
    if depth > 4:  # a recursive model: its name said once is enough
        return "..."
    reference = field.get("$ref")
    if isinstance(reference, str):
        return reference.rsplit("/", 1)[-1]
    if "enum" in field and isinstance(field["enum"], list):
        values = cast(list[Any], field["enum"])
        return f"Literal[{', '.join(_python_literal(v) for v in values)}]"
    if "const" in field:
        return f"Literal[{_python_literal(field['const'])}]"
    for combinator in ("anyOf", "oneOf"):
        options = field.get(combinator)
        if isinstance(options, list):
            parts = [
                _type_name(_mapping(o), depth + 1) for o in cast(list[Any], options)
            ]
            return " | ".join(dict.fromkeys(parts))
    kind = field.get("type")
    if isinstance(kind, list):
        parts = [_type_name({"type": k}, depth + 1) for k in cast(list[Any], kind)]
        return " | ".join(dict.fromkeys(parts))
    if kind == "array" and isinstance(field.get("items"), dict):
        return f"list[{_type_name(_mapping(field['items']), depth + 1)}]"
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    return "Any"


def _python_literal(value: object) -> str:
    """A default as Python writes it: ``"x"``, ``1``, ``True``, ``None``."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _title(item: Mapping[str, Any]) -> str:
    return _one(item.get("title") or item.get("name") or "")


def _located(item: Mapping[str, Any], where: str) -> str:
    """``title <uri>``: a resource or template in the listing."""
    return f"{_title(item)} <{_one(item.get(where))}>"


SUMMARY_MAX: Final = 200  # characters of a description the listing shows


def _named(head: str, item: Mapping[str, Any]) -> str:
    """``head: the description's first line``, cut at :data:`SUMMARY_MAX`
    (a server's one-line description can be megabytes; describing the tool
    shows it whole)."""
    description = printable(str(item.get("description") or "")).strip().splitlines()
    if not description:
        return head
    first = description[0]
    if len(first) > SUMMARY_MAX:
        first = first[: SUMMARY_MAX - 1].rstrip() + "…"
    return f"{head}: {first}"


def _prompt_call(prompt: Mapping[str, Any]) -> str:
    found: Any = prompt.get("arguments")
    arguments = cast(list[Any], found) if isinstance(found, list) else []
    shown: list[str] = []
    for argument in arguments:
        if isinstance(argument, dict):
            entry = cast(dict[str, Any], argument)
            optional = "" if entry.get("required") else "?"
            shown.append(f"{_one(entry.get('name'))}{optional}")
    return f"{_one(prompt.get('name'))}({', '.join(shown)})"


def describe_tool(tool: Mapping[str, Any]) -> list[str]:
    """A tool's description, its inputs as a form, and its output schema."""
    lines = [_one(tool["name"])]
    description = printable(str(tool.get("description") or "")).strip()
    lines.extend(f"  {row}" for row in description.splitlines())
    inputs = describe_form(_mapping(tool.get("inputSchema")))
    lines.append("")
    lines.append("inputs (--arg NAME=VALUE):" if inputs else "inputs: none")
    lines.extend(f"  {row}" for row in inputs)
    output = tool.get("outputSchema")
    if isinstance(output, dict):
        lines.append("")
        lines.append("output (structured):")
        rows = describe_form(cast(Mapping[str, Any], output))
        lines.extend(f"  {row}" for row in rows or ["(an object)"])
    return lines


class MediaFolder:
    """Where ``--save-media DIR`` writes a result's images and audio, and the
    files it could not write.

    The files are named here (``image-3.png``), not by the user, so a name
    someone else planted in a shared folder is never followed: a symbolic
    link or anything but a regular file (a FIFO would block) is refused,
    and the result says the file was not saved.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed: list[str] = []

    @classmethod
    def open(cls, path: Path) -> MediaFolder:
        """The folder, made if missing: checked before the call.

        Raises:
            OSError: it cannot be made, or is not a folder.
        """
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is not a folder")
        return cls(path)

    def save(self, name: str, data: bytes) -> str:
        """Write ``data`` to ``name`` in the folder: where it went, or why not."""
        path = self.path / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as exc:
            return self._failed(path, exc)
        with os.fdopen(fd, "wb") as out:
            there = os.fstat(out.fileno())
            if not stat.S_ISREG(there.st_mode):
                return self._failed(path, None)
            if there.st_nlink > 1:  # a hard link planted to a file elsewhere
                return self._refused(f"{path} is a hard link (not written through)")
            out.truncate()
            out.write(data)
        return f"saved to {path}"

    def _failed(self, path: Path, exc: OSError | None) -> str:
        # ELOOP: a symbolic link (O_NOFOLLOW); ENXIO: a FIFO nobody reads;
        # EACCES: another user's file or FIFO in a sticky folder (/tmp), which
        # Linux refuses to open with O_CREAT (fs.protected_regular, _fifos).
        if exc is None or exc.errno in (errno.ELOOP, errno.ENXIO):
            return self._refused(f"{path} is not a regular file (not followed)")
        if exc.errno in (errno.EACCES, errno.EPERM) and _someone_elses(path):
            return self._refused(f"{path} is another user's file (not written)")
        return self._refused(f"cannot write {path}: {exc.strerror or exc}")

    def _refused(self, why: str) -> str:
        self.failed.append(why)
        return f"not saved: {why}"


def _someone_elses(path: Path) -> bool:
    """Whether something is at ``path`` that another user owns."""
    try:
        return path.lstat().st_uid != os.geteuid()
    except OSError:
        return False


def result_lines(
    content: Sequence[Any], save_media: MediaFolder | None = None
) -> list[str]:
    """Every block of a result, readable; media saved in ``save_media``."""
    lines: list[str] = []
    for index, block in enumerate(content, 1):
        if isinstance(block, Text):
            lines.extend(printable(block.text).splitlines() or [""])
        elif isinstance(block, Image | Audio):
            lines.append(_media(block, index, save_media))
        else:
            lines.extend(_resource_lines(block))
    return lines


def _resource_lines(block: Any) -> list[str]:
    # The SDK's models are imported here, not at start-up: a result holding
    # a resource was decoded with them, so they are loaded already.
    import mcp_types

    if isinstance(block, mcp_types.ResourceLink):
        return [f"{_one(block.title or block.name)} <{_one(block.uri)}>"]
    if isinstance(block, mcp_types.EmbeddedResource):
        return _embedded(block.resource)
    return [f"[{type(block).__name__}]"]  # a newer server's block: said, not dropped


def _media(block: Image | Audio, index: int, folder: MediaFolder | None) -> str:
    kind = "image" if isinstance(block, Image) else "audio"
    mime = _one(block.mime_type)
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} {mime}, not valid base64]"
    shown = f"[{kind} {mime}, {_size(len(data))}]"
    if folder is None:
        return shown
    extension = (
        mimetypes.guess_extension(block.mime_type)
        or _EXTENSIONS.get(block.mime_type)
        or ".bin"
    )
    return f"{shown} {folder.save(f'{kind}-{index}{extension}', data)}"


_EXTENSIONS = {"audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg"}
"""Types the ``mimetypes`` table lacks on some systems."""


def _embedded(resource: Any) -> list[str]:
    uri = _one(getattr(resource, "uri", ""))
    # The models' own name when they have it: fastmcp, once imported, makes
    # the camelCase one a deprecated alias that warns.
    if hasattr(resource, "mime_type"):
        mime = getattr(resource, "mime_type", None)
    else:
        mime = getattr(resource, "mimeType", None)
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        rows = printable(text).splitlines()
        return [f"[resource {uri}]", *(f"  {row}" for row in rows)]
    blob = getattr(resource, "blob", "")
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return [f"[resource {uri}, {_one(mime or 'binary')}, {_size(size)}]"]


def _size(count: int) -> str:
    return f"{count} B" if count < 1024 else f"{count / 1024:.1f} KB"
