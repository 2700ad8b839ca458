"""The ``WWW-Authenticate`` header, both ways: write a challenge, read them all.

A protected server answers 401 and 403 with a ``Bearer`` challenge (RFC 6750
§3) whose parameters tell the client where the resource's metadata is
(``resource_metadata``, RFC 9728 §5.1), which scopes the request needs
(``scope``) and what went wrong (``error``, ``error_description``). The server
side writes them with :func:`format_challenge`; the client side reads them
with :func:`parse_challenges` (or :func:`bearer_params`).

The grammar is RFC 9110 §11.6.1: comma-separated challenges, each a scheme
followed by ``name=value`` parameters (a token or a quoted string with ``\\``
escapes) or by one ``token68``. Reading is lenient where servers are sloppy
(unquoted URLs, stray commas, any case of scheme and names); writing always
quotes. Sans-IO: strings in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, final

import attrs

__all__ = ["Challenge", "bearer_params", "format_challenge", "parse_challenges"]

_TOKEN: Final = re.compile(r'[^\s,="]+')
_SPACE: Final = re.compile(r"\s*")
_TOKEN68_TAIL: Final = re.compile(r"=+")


@final
@attrs.frozen
class Challenge:
    """One challenge: its scheme (lower case), parameters (names in lower case;
    the first of a repeated name wins) and token68, if it has one instead."""

    scheme: str
    params: Mapping[str, str] = attrs.field(factory=dict[str, str])
    token68: str | None = None


def format_challenge(scheme: str, params: Iterable[tuple[str, str]]) -> str:
    """``scheme name="value", ...``, every value quoted and escaped."""
    rendered = ", ".join(f"{name}={_quote(value)}" for name, value in params)
    return f"{scheme} {rendered}" if rendered else scheme


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_params(header: str | None) -> Mapping[str, str] | None:
    """The parameters of the ``Bearer`` challenge in ``header`` (None: none)."""
    if not header:
        return None
    for challenge in parse_challenges(header):
        if challenge.scheme == "bearer":
            return challenge.params
    return None


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value (several headers joined
    with ``", "``). What cannot be read is skipped, never raised."""
    return _Reader(header).challenges()


@final
class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def challenges(self) -> list[Challenge]:
        found: list[Challenge] = []
        while self._skip_commas():
            scheme = self._token()
            if scheme is None:  # junk where a scheme should be: skip a char
                self.at += 1
                continue
            found.append(self._challenge(scheme.lower()))
        return found

    def _challenge(self, scheme: str) -> Challenge:
        params: dict[str, str] = {}
        token68 = self._token68()
        if token68 is not None:
            return Challenge(scheme, params, token68)
        while self._skip_commas():
            start = self.at
            name = self._token()
            self._space()
            if name is None or not self.text.startswith("=", self.at):
                self.at = start  # the next challenge's scheme
                break
            self.at += 1
            self._space()
            value = self._quoted() if self.text.startswith('"', self.at) else None
            if value is None:
                value = self._token() or ""
            params.setdefault(name.lower(), value)
        return Challenge(scheme, params)

    def _token68(self) -> str | None:
        """A token68 right after the scheme (``Basic dXNlcg==``), if there is one:
        a token (and ``=`` padding) alone up to a comma or the end."""
        start = self.at
        self._space()
        token = self._token()
        if token is not None:
            tail = _TOKEN68_TAIL.match(self.text, self.at)
            end = tail.end() if tail else self.at
            rest = self.text[end:].lstrip(" \t")
            if not rest or rest.startswith(","):
                self.at = end
                return token + (tail.group() if tail else "")
        self.at = start
        return None

    def _skip_commas(self) -> bool:
        """Skip spaces and commas; whether anything is left."""
        while self.at < len(self.text) and self.text[self.at] in " \t,":
            self.at += 1
        return self.at < len(self.text)

    def _space(self) -> None:
        found = _SPACE.match(self.text, self.at)
        if found is not None:
            self.at = found.end()

    def _token(self) -> str | None:
        found = _TOKEN.match(self.text, self.at)
        if found is None:
            return None
        self.at = found.end()
        return found.group()

    def _quoted(self) -> str:
        out: list[str] = []
        self.at += 1  # the opening quote
        while self.at < len(self.text):
            char = self.text[self.at]
            self.at += 1
            if char == "\\" and self.at < len(self.text):
                out.append(self.text[self.at])
                self.at += 1
            elif char == '"':
                break
            else:
                out.append(char)
        return "".join(out)
