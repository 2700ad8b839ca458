# Checked by tests/typing/test_inference.py with pyright: not collected by pytest.
from pydantic import BaseModel

from runtime import Context, ElicitKey, Op


class Move(BaseModel):
    cell: int


MOVE = ElicitKey("move", Move)


def body(ctx: Context) -> Op[None]:
    plain = yield from ctx.sample("hi")
    reveal_type(plain)  # noqa: F821
    structured = yield from ctx.sample("hi", schema=Move)
    reveal_type(structured.parsed)  # noqa: F821
    guaranteed = yield from ctx.sample_schema("hi", schema=Move)
    reveal_type(guaranteed.parsed)  # noqa: F821
    elicited = yield from ctx.elicit(MOVE, "your move")
    reveal_type(elicited.content)  # noqa: F821
    a, b = yield from ctx.branch(lambda c: child(c), lambda c: other(c))
    reveal_type(a)  # noqa: F821
    reveal_type(b)  # noqa: F821
    now = yield from ctx.now()
    reveal_type(now)  # noqa: F821


def child(ctx: Context) -> Op[int]:
    reply = yield from ctx.sample("x")
    return len(reply.text)


def other(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("y")
    return reply.text
