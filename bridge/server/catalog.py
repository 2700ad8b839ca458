"""Resources, resource templates and prompts an MCP server offers beside tools.

These are MCP server features with no runtime meaning, so they live in the
bridge. A prompt's body is written like a tool's (``fn(params, ctx)``, a plain
function or an effect generator), so a prompt can elicit input too; its params
model must have string fields only (MCP prompt arguments are strings).

What a body may return:

* a resource: ``str`` (text), ``bytes`` (a blob), or a list of MCP
  ``ResourceContents`` dicts for several parts;
* a prompt: ``str`` (one user message), or a list whose items are ``Message``
  values or ``(role, block)`` pairs, where a block is ``Text``, ``Image``,
  ``Audio`` or an ``mcp_types`` ``EmbeddedResource`` / ``ResourceLink``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, final

import attrs
from pydantic import BaseModel

from runtime import Tool, tool
from runtime.errors import InvalidTool
from runtime.lowlevel import unsendable

__all__ = [
    "Completer",
    "Prompt",
    "Resource",
    "ResourceTemplate",
    "prompt",
    "resource",
    "resource_template",
]

Completer = Callable[[str], list[str]]
"""Returns completion candidates for an argument's partial value."""

_TEMPLATE_VAR = re.compile(r"\{([A-Za-z0-9_]+)\}")


@final
@attrs.frozen(kw_only=True)
class Resource:
    """A concrete resource at ``uri``; ``read()`` produces its contents."""

    uri: str
    name: str
    read: Callable[[], Any] = attrs.field(repr=False)
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    def __attrs_post_init__(self) -> None:
        _refuse_unsendable("resource", self.uri, self)


@final
@attrs.frozen(kw_only=True)
class ResourceTemplate:
    """Resources matching ``uri_template`` (RFC 6570 level 1: ``{name}`` only)."""

    uri_template: str
    name: str
    read: Callable[[Mapping[str, str]], Any] = attrs.field(repr=False)
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    complete: Mapping[str, Completer] = attrs.field(factory=dict[str, Completer])

    def __attrs_post_init__(self) -> None:
        _refuse_unsendable("resource template", self.uri_template, self)

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables if ``uri`` matches, else None."""
        pattern = "".join(
            f"(?P<{part}>[^/]+)" if index % 2 else re.escape(part)
            for index, part in enumerate(_TEMPLATE_VAR.split(self.uri_template))
        )
        found = re.fullmatch(pattern, uri)
        return None if found is None else found.groupdict()


@final
@attrs.frozen(kw_only=True)
class Prompt:
    """A prompt template; its ``program`` is a tool whose result is the messages."""

    program: Tool[Any, Any]
    complete: Mapping[str, Completer] = attrs.field(factory=dict[str, Completer])

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def description(self) -> str | None:
        return self.program.description

    @property
    def title(self) -> str | None:
        return self.program.title

    def arguments(self) -> list[dict[str, Any]]:
        """MCP ``PromptArgument`` objects from the params model's fields."""
        params = self.program.params
        out: list[dict[str, Any]] = []
        for name, field in params.model_fields.items():
            argument: dict[str, Any] = {"name": name, "required": field.is_required()}
            if field.description:
                argument["description"] = field.description
            out.append(argument)
        return out


def _refuse_unsendable(
    kind: str, named: str, item: Resource | ResourceTemplate
) -> None:
    """Refuse a definition whose text UTF-8 cannot carry (a lone surrogate):
    the list that holds it could not be written, for every item in it (as a
    tool's, ``runtime.tools.define``).

    Raises:
        InvalidTool: naming the definition and the field.
    """
    fields = ("uri", "uri_template", "name", "title", "description", "mime_type")
    texts = {f: getattr(item, f) for f in fields if getattr(item, f, None) is not None}
    found = unsendable(texts)
    if found is not None:
        raise InvalidTool(f"{kind} {named!r}: {found.describe()}")


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Callable[[], Any]], Resource]:
    """Declare ``fn()`` as the reader of the resource at ``uri``."""

    def define(fn: Callable[[], Any]) -> Resource:
        return Resource(
            uri=uri,
            name=name or fn.__name__,
            read=fn,
            title=title,
            description=description if description is not None else fn.__doc__,
            mime_type=mime_type,
        )

    return define


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    complete: Mapping[str, Completer] | None = None,
) -> Callable[[Callable[[Mapping[str, str]], Any]], ResourceTemplate]:
    """Declare ``fn(variables)`` as the reader of resources matching the template."""
    names = set(_TEMPLATE_VAR.findall(uri_template))
    if not names:
        raise InvalidTool(f"resource template {uri_template!r} has no {{variable}}")

    def define(fn: Callable[[Mapping[str, str]], Any]) -> ResourceTemplate:
        return ResourceTemplate(
            uri_template=uri_template,
            name=name or fn.__name__,
            read=fn,
            title=title,
            description=description if description is not None else fn.__doc__,
            mime_type=mime_type,
            complete=dict(complete or {}),
        )

    return define


def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    elicits: Any = None,
    complete: Mapping[str, Completer] | None = None,
) -> Callable[[Callable[..., Any]], Prompt]:
    """Declare a prompt from ``fn(params, ctx)`` or ``fn(ctx)`` (see the module doc)."""

    def define(fn: Callable[..., Any]) -> Prompt:
        program = tool(
            name=name, title=title, description=description, elicits=elicits
        )(fn)
        _check_string_arguments(program.params)
        return Prompt(program=program, complete=dict(complete or {}))

    return define


def _check_string_arguments(params: type[BaseModel]) -> None:
    for field_name, field in params.model_fields.items():
        if field.annotation not in (str, str | None):  # pyright: ignore[reportUnnecessaryContains]
            raise InvalidTool(
                f"prompt argument {params.__name__}.{field_name} must be a str: MCP "
                f"prompt arguments are strings"
            )
