"""JSON text from a model provider, read into values an MCP message can carry.

A provider's answer (its body, a stream event, a tool call's arguments, a
structured answer in text) goes, once decoded, into a JSON-RPC message to an
MCP server. Python's ``json`` reads more than that message can carry, and
:func:`loads` refuses or mends each of those, in one place:

* ``NaN``, ``Infinity`` and numbers past a float (``1e400``): written back as
  bare ``NaN`` (no JSON) or refused by the writer; a :class:`ValueError` here;
* nesting deeper than :data:`MAX_DEPTH`: the JSON-RPC reader of the other
  side stops at about 200 levels, so a 400-byte answer nested 200 deep was
  dropped unread there and the call hung; nesting past Python's recursion
  limit (a 2 KB body) was a ``RecursionError`` traceback; a
  :class:`ValueError` here;
* a lone surrogate escape (``"\\ud800"``): no Unicode text can hold it, and
  the message it went into could not be written; read as U+FFFD, as the
  JSON-RPC reader reads one.

Pure: no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

__all__ = ["MAX_DEPTH", "loads"]

MAX_DEPTH: Final = 100
"""Levels of arrays and objects a provider's JSON may nest."""

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text`` (see the module doc).

    Raises:
        ValueError: it is not JSON, holds a number a float cannot (``NaN``,
            ``Infinity``, ``1e400``), or nests deeper than :data:`MAX_DEPTH`;
            the message is short and never quotes the text.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(_too_deep()) from None
    return _mended(value, 0)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("a number past a float's range")
    return number


def _too_deep() -> str:
    return f"JSON nested deeper than {MAX_DEPTH} levels"


def _mended(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list | dict) and depth >= MAX_DEPTH:
        raise ValueError(_too_deep())
    if isinstance(value, list):
        return [_mended(item, depth + 1) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {
            _mended(key, depth + 1): _mended(item, depth + 1)
            for key, item in value.items()  # pyright: ignore[reportUnknownVariableType]
        }
    return value
