"""``@tool(version=, continues=)``: which recorded calls a tool's code goes on with.

A call or task recorded under a version goes on under code of the same
version, or of one that lists it in ``continues``; :meth:`Tool.continues_from`
is the one predicate every path asks (a sealed ``requestState``, a task, a
2025-11-25 durable call). A mistake in ``continues`` is caught when the tool
is defined, with one line naming it.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Context, tool
from runtime.errors import InvalidTool


def body(ctx: Context) -> str:
    return "ok"


def test_a_tool_goes_on_with_its_own_version_and_those_it_lists() -> None:
    made = tool(name="job", version="3", continues=("1", "2"))(body)
    assert made.continues == frozenset({"1", "2"})
    assert made.continues_from("3")
    assert made.continues_from("1")
    assert made.continues_from("2")
    assert not made.continues_from("4")
    assert not made.continues_from(None)


def test_without_continues_only_its_own_version() -> None:
    made = tool(name="job", version="2")(body)
    assert made.continues == frozenset()
    assert made.continues_from("2")
    assert not made.continues_from("1")


def test_the_default_version_is_a_hash_and_continues_nothing() -> None:
    made = tool(name="job")(body)
    assert made.version is not None
    assert made.continues_from(made.version)
    assert not made.continues_from("1")


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"continues": ("1",)}, "continues needs an explicit version"),
        ({"version": "2", "continues": ("2",)}, "the tool's own version"),
        ({"version": "2", "continues": ("1", "2")}, "the tool's own version"),
        ({"version": "2", "continues": (1,)}, "version strings, got 1"),
        ({"version": "2", "continues": ("",)}, "version strings, got ''"),
        ({"version": "2", "continues": "1"}, r"write continues=\('1',\)"),
        ({"version": "2", "continues": 1}, "a tuple of version strings"),
        # Only a str is hinted at as a one-version tuple: `(None,)` for a
        # None would send the author to another wrong value.
        ({"version": "2", "continues": None}, r"strings, got None$"),
    ],
)
def test_a_bad_continues_is_refused_at_decoration(
    kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidTool, match=says) as caught:
        tool(name="job", **kwargs)(body)
    assert "\n" not in str(caught.value)
    assert "'job'" in str(caught.value)
