"""Form fields: one property of a ``requestedSchema``, described and parsed.

Owns how a field of a flat MCP form is shown to a person (title, description,
a hint naming its type, format and bounds, numbered choices, the default) and
how a typed line becomes a JSON value: numbers, yes/no, a choice by number,
value or title, a comma-separated multi-select, formats (``date``,
``date-time``, ``email``, ``uri``). Every value is then checked against the
field's own schema with jsonschema-rs (:func:`_check`); a failure is
:class:`Invalid`, whose text says what to type instead.

What a field shows is the server's words, each on one line
(:func:`~bridge.elicit.printable_line`, cut at
:data:`~bridge.elicit.MAX_LINE_SHOWN`): a title, a description, a choice, a
bound or a default holding a line break cannot print a line of its own.

Pure: no I/O and no trio. The terminal form asks; this module understands.
Fields that are not MCP primitives (from a server that sends richer schemas)
are read as JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, cast, final
from urllib.parse import urlsplit

import attrs

from bridge.printable import MAX_LINE_SHOWN, printable_line

__all__ = ["Choice", "Field", "Invalid", "form_fields"]

Kind: TypeAlias = Literal[
    "string", "integer", "number", "boolean", "select", "multiselect", "json"
]

_YES = frozenset({"y", "yes", "true", "t", "1", "on"})
_NO = frozenset({"n", "no", "false", "f", "0", "off"})
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FORMAT_HINTS = {
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, e.g. 2025-06-01T09:30:00Z",
    "email": "an email address",
    "uri": "a URI, e.g. https://example.com/page",
}


class Invalid(ValueError):
    """An answer that does not fit its field; the text says what would."""


@final
@attrs.frozen
class Choice:
    """One option of a select: the ``value`` sent and the ``title`` shown."""

    value: Any
    title: str


@final
@attrs.frozen(kw_only=True)
class Field:
    """One property of a form: its schema, whether it is required, its kind."""

    name: str
    schema: Mapping[str, Any]
    required: bool
    kind: Kind
    choices: tuple[Choice, ...] = ()

    @property
    def title(self) -> str:
        """The field's title (else its name) as shown: one line, cut."""
        return _line(self.schema.get("title") or self.name)

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    def describe(self) -> list[str]:
        """The lines shown before the prompt: title, description, hint, choices."""
        need = "required" if self.required else "optional"
        lines = [f"{self.title} ({need})"]
        description = self.schema.get("description")
        if description:
            lines.append(f"  {_line(description)}")
        lines.append(f"  {_line(self.hint())}")
        width = len(str(len(self.choices)))
        for number, choice in enumerate(self.choices, 1):
            shown = _line(choice.title)
            if choice.title != str(choice.value):
                shown = f"{shown} ({_line(choice.value)})"
            lines.append(f"  {number:>{width}}) {shown}")
        return lines

    def prompt(self) -> str:
        """The prompt for the answer line, showing the default in brackets."""
        if self.has_default:
            return f"{self.title} [{self.show(self.default)}]: "
        return f"{self.title}: "

    def hint(self) -> str:
        """What to type, in words."""
        return _HINTS[self.kind](self)

    def show(self, value: Any) -> str:
        """A value as the person would type it (one line, cut)."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            return _line(", ".join(str(v) for v in cast(list[Any], value)))
        return _line(value)

    def parse(self, text: str) -> Any:
        """The JSON value for ``text``, checked against this field's schema.

        Raises:
            Invalid: ``text`` does not fit; the message says what would.
        """
        value = _PARSERS[self.kind](self, text)
        _check(self.schema, value)
        return value


def form_fields(schema: Mapping[str, Any]) -> list[Field]:
    """The fields of a form's ``requestedSchema``, in declaration order.

    Read as far as it is a schema (a tool's ``inputSchema`` shown by
    ``--describe`` is the server's, unchecked): ``properties`` that is not
    an object has no fields, and only the strings of ``required`` count."""
    found: Any = schema.get("properties")
    properties: Mapping[str, Any] = (
        cast(Mapping[str, Any], found) if isinstance(found, Mapping) else {}
    )
    named: Any = schema.get("required")
    required = (
        {name for name in cast(Sequence[Any], named) if isinstance(name, str)}
        if isinstance(named, list)
        else set[str]()
    )
    fields: list[Field] = []
    for name, raw in properties.items():
        prop: Mapping[str, Any] = (
            cast(Mapping[str, Any], raw) if isinstance(raw, Mapping) else {}
        )
        kind, choices = _kind(prop)
        fields.append(
            Field(
                name=name,
                schema=prop,
                required=name in required,
                kind=kind,
                choices=choices,
            )
        )
    return fields


def describe_form(schema: Mapping[str, Any]) -> list[str]:
    """Every field of ``schema`` as a person would be asked it, by name.

    What ``yieldmcp call SERVER TOOL --describe`` shows of a tool's input
    and output schemas.
    """
    lines: list[str] = []
    for field in form_fields(schema):
        first, *rest = field.describe()
        shown = "none" if field.default is None else field.show(field.default)
        default = f" [default {shown}]" if field.has_default else ""
        lines.append(f"{_line(field.name)}: {first}{default}")
        lines.extend(rest)
    return lines


def _line(value: object) -> str:
    """A server's word in a form, as shown: one line, cut."""
    return printable_line(str(value), most=MAX_LINE_SHOWN)


# --- kinds ------------------------------------------------------------------------


def _kind(prop: Mapping[str, Any]) -> tuple[Kind, tuple[Choice, ...]]:
    if prop.get("type") == "array":
        items = prop.get("items")
        choices = (
            _choices(cast(Mapping[str, Any], items))
            if isinstance(items, Mapping)
            else ()
        )
        return ("multiselect", choices) if choices else ("json", ())
    choices = _choices(prop)
    if choices:
        return "select", choices
    kind = prop.get("type")
    if kind in ("string", "integer", "number", "boolean"):
        return kind, ()
    return "json", ()


def _choices(schema: Mapping[str, Any]) -> tuple[Choice, ...]:
    values = schema.get("enum")
    if isinstance(values, list):
        names: Any = schema.get("enumNames")
        titles: list[Any] = list(cast(list[Any], values))
        if isinstance(names, list) and len(cast(list[Any], names)) == len(titles):
            titles = cast(list[Any], names)
        return tuple(
            Choice(v, str(t))
            for v, t in zip(cast(list[Any], values), titles, strict=True)
        )
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and all(
            isinstance(o, Mapping) and "const" in o for o in cast(list[Any], options)
        ):
            consts = cast(list[Mapping[str, Any]], options)
            return tuple(
                Choice(o["const"], str(o.get("title", o["const"]))) for o in consts
            )
    return ()


# --- hints --------------------------------------------------------------------------


def _range(schema: Mapping[str, Any], low: str, high: str, unit: str = "") -> str:
    lo, hi = schema.get(low), schema.get(high)
    if lo is not None and hi is not None:
        return f", {lo} to {hi}{unit}"
    if lo is not None:
        return f", at least {lo}{unit}"
    if hi is not None:
        return f", at most {hi}{unit}"
    return ""


def _string_hint(field: Field) -> str:
    fmt = field.schema.get("format")
    if fmt in _FORMAT_HINTS:
        return _FORMAT_HINTS[str(fmt)]
    return "text" + _range(field.schema, "minLength", "maxLength", " characters")


def _multiselect_hint(field: Field) -> str:
    bounds = _range(field.schema, "minItems", "maxItems", " choices")
    return f"choose any: numbers or values, separated by commas{bounds}"


def _integer_hint(field: Field) -> str:
    return "a whole number" + _range(field.schema, "minimum", "maximum")


def _number_hint(field: Field) -> str:
    return "a number" + _range(field.schema, "minimum", "maximum")


_HINTS: dict[Kind, Callable[[Field], str]] = {
    "string": _string_hint,
    "integer": _integer_hint,
    "number": _number_hint,
    "boolean": lambda field: "yes or no",
    "select": lambda field: "choose one: type its number or value",
    "multiselect": _multiselect_hint,
    "json": lambda field: "a JSON value",
}


# --- parsers ------------------------------------------------------------------------


def _string(field: Field, text: str) -> Any:
    fmt = field.schema.get("format")
    if fmt in _FORMAT_HINTS and not _FORMAT_CHECKS[str(fmt)](text):
        raise Invalid(f"expected {_FORMAT_HINTS[str(fmt)]}")
    return text


def _integer(field: Field, text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        raise Invalid("expected a whole number, e.g. 3") from None


def _number(field: Field, text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise Invalid("expected a number, e.g. 2.5") from None
    if not math.isfinite(value):
        raise Invalid("expected a finite number")
    return value


def _boolean(field: Field, text: str) -> Any:
    word = text.lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise Invalid("expected yes or no")


def _select(field: Field, text: str) -> Any:
    return _pick(field.choices, text)


def _multiselect(field: Field, text: str) -> Any:
    picked: list[Any] = []
    for token in (t.strip() for t in text.split(",")):
        if token:
            value = _pick(field.choices, token)
            if value not in picked:
                picked.append(value)
    return picked


def _json(field: Field, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pick(choices: Sequence[Choice], text: str) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1].value
    for choice in choices:
        if text == str(choice.value):
            return choice.value
    folded = text.casefold()
    for choice in choices:
        if folded in (str(choice.value).casefold(), choice.title.casefold()):
            return choice.value
    raise Invalid(f"expected a number from 1 to {len(choices)}, or one of the values")


_PARSERS: dict[Kind, Callable[[Field, str], Any]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "select": _select,
    "multiselect": _multiselect,
    "json": _json,
}


# --- checks -------------------------------------------------------------------------


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return bool(_DATE.match(text))


def _is_date_time(text: str) -> bool:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text.upper() and value.tzinfo is not None


def _is_uri(text: str) -> bool:
    parts = urlsplit(text)
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*$", parts.scheme)) and bool(
        parts.netloc or parts.path
    )


_FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "date": _is_date,
    "date-time": _is_date_time,
    "email": lambda text: bool(_EMAIL.match(text)),
    "uri": _is_uri,
}


def _check(schema: Mapping[str, Any], value: Any) -> None:
    """Raise :class:`Invalid` if ``value`` breaks the field's ``schema``.

    The server picks the schema, and the check runs on the event loop, where
    no ``--timeout`` or Ctrl-C can end it: so jsonschema-rs checks, as a
    result's ``outputSchema`` is checked (:mod:`bridge.client.output_schemas`),
    in time linear in the answer (a ``pattern`` that needs backtracking stops
    at its bound and fails). Python's ``jsonschema`` is no fallback: its ``re``
    took minutes on a typed name against ``^(\\w+\\s?)*$``, and a ``$ref`` to
    the field itself recursed until Python's limit. A schema jsonschema-rs
    cannot compile (a ``$ref`` elsewhere, never fetched; a pattern that is not
    ECMA-262) checks nothing here: the server checks what it is sent."""
    from jsonschema_rs import validator_for

    try:
        validator = validator_for(dict(schema), validate_formats=True, offline=True)
    except ValueError:
        return
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        raise Invalid(str(error.message))
