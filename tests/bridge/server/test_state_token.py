"""Sealed request state: any change to a token is detected, uniformly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.server.state_token import KEY_ENV, Sealer, new_key
from runtime.errors import RequestError

# A fixed clock: the token is sealed at import, and a suite that runs longer
# than the sealer's ttl after collection must not find it expired (then every
# mutation would be refused for its age, not for the mutation).
NOW = 1_800_000_000.0
SEALER = Sealer([b"s" * 32], clock=lambda: NOW)
TOKEN = SEALER.seal(
    {"journal": {"answers": {"0": ["d", "secret"]}}}, purpose="tools/call"
)


def test_a_sealed_payload_opens_for_its_purpose_only() -> None:
    assert (
        SEALER.open(TOKEN, purpose="tools/call")["journal"]["answers"]["0"][1]
        == "secret"
    )
    with pytest.raises(RequestError):
        SEALER.open(TOKEN, purpose="prompts/get")


@st.composite
def mutations(draw: st.DrawFn) -> str:
    token = TOKEN
    kind = draw(st.sampled_from(["replace", "insert", "delete", "append", "truncate"]))
    index = draw(st.integers(0, len(token) - 1))
    char = draw(st.characters(codec="ascii"))
    match kind:
        case "replace":
            return token[:index] + char + token[index + 1 :]
        case "insert":
            return token[:index] + char + token[index:]
        case "delete":
            return token[:index] + token[index + 1 :]
        case "append":
            return token + draw(st.text(min_size=1, max_size=12))
        case _:
            return token[:index]


@given(mutations())
def test_every_mutation_is_rejected_with_the_same_error(token: str) -> None:
    if token == TOKEN:
        return  # replacing a character with itself is no mutation
    with pytest.raises(RequestError) as info:
        SEALER.open(token, purpose="tools/call")
    assert (info.value.code, info.value.message, info.value.data) == (
        -32602,
        "Invalid or expired requestState",
        {"reason": "invalid_request_state"},
    )


@given(st.one_of(st.none(), st.integers(), st.text(), st.binary().map(repr)))
def test_arbitrary_values_are_rejected(token: object) -> None:
    with pytest.raises(RequestError):
        SEALER.open(token, purpose="tools/call")


def test_rotation_opens_with_old_keys_and_seals_with_the_first() -> None:
    old = Sealer([b"o" * 32])
    rotated = Sealer([b"n" * 32, b"o" * 32])
    assert rotated.open(old.seal({"x": 1}, purpose="p"), purpose="p")["x"] == 1
    with pytest.raises(RequestError):
        old.open(rotated.seal({"x": 1}, purpose="p"), purpose="p")


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    key = new_key()
    monkeypatch.setenv(KEY_ENV, key)
    assert Sealer().open(Sealer().seal({"x": 2}, purpose="p"), purpose="p")["x"] == 2
    monkeypatch.setenv(KEY_ENV, "not-a-key")
    with pytest.raises(ValueError, match=r"32 bytes|base64"):
        Sealer()


def _reference_b64decode(text: str) -> bytes | None:
    """The strict decoding by definition: decode, re-encode, compare."""
    import base64
    import binascii
    import re

    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        return None
    try:
        data = base64.b64decode(
            text + "=" * (-len(text) % 4), altchars=b"-_", validate=True
        )
    except (binascii.Error, ValueError):
        return None
    encoded = base64.urlsafe_b64encode(data).decode().rstrip("=")
    return data if encoded == text else None


_b64ish = st.text(
    alphabet=st.sampled_from(
        'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= é"\\\ud800'
    ),
    min_size=1,
    max_size=12,
)


def _encoded(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@given(st.one_of(_b64ish, st.binary(min_size=1, max_size=9).map(_encoded)))
def test_the_strict_decoder_is_decode_reencode_compare(text: str) -> None:
    from bridge.server.state_token import _b64decode  # pyright: ignore[reportPrivateUsage]

    assert _b64decode(text) == _reference_b64decode(text)


@given(st.binary(max_size=40))
def test_the_encoder_writes_unpadded_base64url(data: bytes) -> None:
    from bridge.server.state_token import _b64encode  # pyright: ignore[reportPrivateUsage]

    assert _b64encode(data) == _encoded(data)
