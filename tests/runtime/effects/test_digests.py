"""Question digests: the fast spellings agree with the canonical definition."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from runtime.lowlevel import Elicit, digest

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
    ),
    max_leaves=6,
)


class Form(BaseModel):
    name: str = Field(title="Name ✓")
    age: int = 0


class Other(BaseModel):
    ok: bool


@given(
    key=st.text(),
    message=st.text(min_size=1),
    model=st.sampled_from([Form, Other]),
    context=st.dictionaries(st.text(), _json, max_size=3),
)
def test_an_elicitation_digest_is_the_digest_of_its_fingerprint(
    key: str, message: str, model: type[BaseModel], context: dict[str, Any]
) -> None:
    effect = Elicit(key=key, message=message, model=model, context=context)
    assert effect.digest() == digest(effect.fingerprint())
    assert effect.digest() == effect.digest()  # made once, the same
