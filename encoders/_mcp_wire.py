"""The MCP eras and the check every encoded payload passes before it is returned.

Owns :data:`Era` and :data:`ERAS`, the official ``mcp-types`` models of each era
(:func:`era_models`), and :func:`checked`: a payload validated against its
era's model, named by era and name (strict, wire names only), skipping the
keys the caller spelled itself from values that are valid by construction,
with cached per-field validators; an era's models are built only when some
key is left to check. Text UTF-8 cannot carry is refused (:func:`utf8`) or
sent as its escape (:func:`escaped`). A failure is a
:class:`~runtime.errors.LocalProtocolError`: we were about to break the protocol.

It spells no payload: :mod:`encoders.mcp` and the modules behind it do.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ValidationError, create_model

from runtime.errors import LocalProtocolError, summarize_validation_error
from runtime.lowlevel import check_json
from runtime.messages import Text

__all__ = [
    "ERAS",
    "Era",
    "JSONObject",
    "checked",
    "era_models",
    "escaped",
    "plain_text",
    "put",
    "utf8",
]

JSONObject = dict[str, Any]

Era: TypeAlias = Literal["2025-11-25", "2026-07-28"]
"""The MCP protocol era a payload is shaped for."""

ERAS: tuple[Era, ...] = ("2025-11-25", "2026-07-28")

_WIRE: dict[str, str] = {
    "2025-11-25": "mcp_types._v2025_11_25",
    "2026-07-28": "mcp_types._v2026_07_28",
}
"""Each era's ``mcp-types`` module, by name: imported on first use (see
:func:`era_models`)."""

_import_models = functools.cache(importlib.import_module)


def plain_text(blocks: Sequence[Any]) -> bool:
    """Text blocks without ``_meta`` or annotations: valid MCP by construction
    (``Text`` checks that its text is a ``str``)."""
    return all(
        type(b) is Text and b.meta is None and b.annotations is None for b in blocks
    )


def era_models(era: str) -> Any:
    """The ``mcp-types`` module of ``era``'s models, imported on first use.

    Building one era's ~150 pydantic models is a fifth of a process's start-up,
    and most processes (a server's connection, a ``yieldmcp call``) speak one
    era: the other era's models are built only if a payload of it is encoded.
    """
    return _import_models(_module_of(era))


def _module_of(era: str) -> str:
    try:
        return _WIRE[era]
    except KeyError:
        raise LocalProtocolError(
            f"unknown MCP era {era!r}; expected one of {list(ERAS)}"
        ) from None


def utf8(text: str, what: str) -> str:
    """``text``, once UTF-8 can carry it.

    A lone surrogate (what bytes decoded with ``errors="surrogateescape"``
    leave: a file name, a subprocess's output) fits in a ``str`` but in no
    JSON message, so the payload holding it would fail at the write.

    Raises:
        LocalProtocolError: naming ``what``, the character and its index.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(
            f"{what} is not valid Unicode: {text[exc.start]!r} at index "
            f"{exc.start} is a lone surrogate (left by decoding bytes with "
            f"errors='surrogateescape'); decode with errors='replace', or send "
            f"the bytes in base64"
        ) from None
    return text


def escaped(text: str) -> str:
    """``text`` with each character UTF-8 cannot carry (a lone surrogate) as
    its backslash escape, ``\\udce9``: for text a person reads (an error, a
    log), which is better sent so than not at all."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def put(out: JSONObject, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def checked(
    era: str, name: str, data: JSONObject, what: str, *, trusted: Sequence[str] = ()
) -> JSONObject:
    """``data``, once valid against ``era``'s model called ``name`` (strict,
    wire names only).

    Keys in ``trusted`` were spelled by the caller from values that are valid
    by construction; they are not validated again. The other keys present are,
    with a validator of just those fields of the model (cached per key set).
    The era's models are built only if some key is left to check: a server
    whose payloads are all valid by construction (most ``tools/list``
    answers) never builds them.
    """
    _module_of(era)  # an unknown era is refused even with nothing to check
    keys = frozenset(k for k in data if k not in trusted)
    if len(keys) == len(data):
        _validate(getattr(era_models(era), name), data, what)
    elif keys:
        model = getattr(era_models(era), name)
        _validate(_fields_of(model, keys), {k: data[k] for k in keys}, what)
    return data


def _validate(model: type[BaseModel], data: JSONObject, what: str) -> None:
    try:
        check_json(model, data)
    except ValidationError as exc:
        raise LocalProtocolError(
            f"{what} would not be valid MCP: {summarize_validation_error(exc)}"
        ) from None


@functools.cache
def _fields_of(model: type[BaseModel], keys: frozenset[str]) -> type[BaseModel]:
    """A model with only the fields of ``model`` whose wire names are ``keys``.

    The fields keep their ``FieldInfo`` (types, constraints, aliases), so a
    value is accepted exactly as ``model`` accepts it; ``mcp-types`` models
    have no model-level validators.
    """
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in model.model_fields.items()
        if (info.alias or name) in keys
    }
    partial: type[BaseModel] = create_model(  # pyright: ignore[reportCallIssue, reportUnknownVariableType]
        f"{model.__name__}Fields", __config__=model.model_config, **fields
    )
    return partial
