"""A branch example: three concurrent samples, combined into one answer.

``three_views`` asks the model for an optimist's, a pessimist's and a
realist's take on a question at the same time (three children of one
``branch``), then combines them with a fourth sample. If any child fails, the
others are cancelled at once (their pending samples are withdrawn) and the
failure surfaces as an ``ExceptionGroup``. The whole branch also runs under a
time and token budget.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from runtime import Context, Limits, Op, tool

VIEWS = ("an optimist", "a pessimist", "a realist")


def view(ctx: Context, who: str, question: str) -> Op[str]:
    reply = yield from ctx.sample(
        f"Answer as {who}, in two sentences: {question}", max_tokens=150
    )
    return reply.text


@tool
def three_views(question: Annotated[str, Field(min_length=1)], ctx: Context) -> Op[str]:
    """Ask three perspectives concurrently and combine them into one answer."""
    optimist, pessimist, realist = yield from ctx.branch(
        lambda c: view(c, VIEWS[0], question),
        lambda c: view(c, VIEWS[1], question),
        lambda c: view(c, VIEWS[2], question),
        limits=Limits(timeout=60, max_tokens=4000),
    )
    summary = yield from ctx.sample(
        "Combine these views into one balanced paragraph:\n"
        f"- optimist: {optimist}\n- pessimist: {pessimist}\n- realist: {realist}",
        max_tokens=300,
    )
    return summary.text
