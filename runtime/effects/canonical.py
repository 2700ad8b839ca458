"""Canonical JSON and digests: the identity of a question.

A question (an effect's fingerprint) is identified by the sha256 of its canonical
JSON: keys sorted, no whitespace, UTF-8, non-finite floats refused. Replay pins
every recorded answer to this digest, so the same question always hashes the
same, across processes and machines.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest", "digest_of_json"]


# One encoder for every call: json.dumps with non-default options builds a new
# JSONEncoder each time, which costs more than encoding a small question.
_ENCODER = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)


def canonical_json(value: Any) -> bytes:
    """``value`` as compact, sorted-key UTF-8 JSON (raises on non-JSON values).

    A lone surrogate (text decoded with ``errors="surrogateescape"``) is
    encoded as its three bytes (``surrogatepass``): the question still has an
    identity, and the encoder that would send it says what is wrong with it
    (every other text encodes exactly as strict UTF-8).
    """
    return _ENCODER.encode(value).encode("utf-8", "surrogatepass")


def digest(value: Any) -> str:
    """A short, URL-safe sha256 digest of ``value``'s canonical JSON."""
    return digest_of_json(canonical_json(value))


def digest_of_json(canonical: bytes) -> str:
    """:func:`digest` of a value whose canonical JSON is ``canonical``."""
    raw = hashlib.sha256(canonical).digest()
    return base64.urlsafe_b64encode(raw[:18]).decode()
