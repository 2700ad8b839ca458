"""Inline analysis with the client's model (seed 004): ``sample_llm`` and vibes.

``sample_llm`` exposes sampling directly: a quick question to the connected
client's model, with its answer, model name and stop reason as structured
output. ``extract_vibes`` asks for 3 to 5 mood keywords describing a piece of
music, as structured output validated against a schema, and falls back to a
neutral answer (and a warning log) when the client cannot sample at all.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from runtime import Context, ModelPreferences, Op, tool
from runtime.lowlevel import CapabilityError


class SampleLlmRequest(BaseModel):
    prompt: str = Field(min_length=1, description="What to ask the model")
    max_tokens: int = Field(default=256, ge=1, le=4096)
    system_prompt: str | None = None


class SampleLlmResponse(BaseModel):
    text: str
    model: str
    stop_reason: str | None


@tool
def sample_llm(params: SampleLlmRequest, ctx: Context) -> Op[SampleLlmResponse]:
    """Request LLM inference from the connected client."""
    reply = yield from ctx.sample(
        params.prompt,
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        model_preferences=ModelPreferences(
            hints=("claude-sonnet",), speed_priority=0.8, intelligence_priority=0.5
        ),
    )
    return SampleLlmResponse(
        text=reply.text, model=reply.model, stop_reason=reply.stop_reason
    )


class Vibes(BaseModel):
    """Mood keywords for a piece of music."""

    keywords: list[str] = Field(min_length=3, max_length=5)


@tool
def extract_vibes(
    description: Annotated[
        str, Field(min_length=1, description="What the clip sounds like")
    ],
    ctx: Context,
) -> Op[Vibes]:
    """Describe a clip's mood in 3-5 keywords, using the client's model."""
    try:
        vibes = yield from ctx.sample_schema(
            f"Describe the mood of this music in 3-5 keywords: {description}",
            schema=Vibes,
            max_tokens=100,
        )
    except CapabilityError:
        yield ctx.log("warning", "the client cannot sample; vibes are a guess")
        return Vibes(keywords=["unknown", "unrated", "unheard"])
    return vibes.parsed
