"""Defining tools: inference from annotations and definition-time errors."""

from __future__ import annotations

import collections.abc
import enum
import json
import math
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from runtime import Context, Op, handoff, tool
from runtime.lowlevel import InvalidArguments, InvalidTool
from runtime.testing import ScriptedPeer, run_scripted, text


class Args(BaseModel):
    """Arguments."""

    city: str = Field(description="Where")


class Out(BaseModel):
    answer: str


def test_params_output_name_and_description_are_inferred() -> None:
    @tool
    def forecast(params: Args, ctx: Context) -> Op[Out]:
        """Forecast the weather."""
        yield ctx.log("info", params.city)
        return Out(answer="sunny")

    assert forecast.name == "forecast"
    assert forecast.description == "Forecast the weather."
    assert forecast.params is Args
    assert forecast.input_schema == Args.model_json_schema()
    assert forecast.output_schema == Out.model_json_schema()
    # Generated once, but each caller gets its own copy to change.
    forecast.input_schema["properties"].clear()
    assert forecast.input_schema == Args.model_json_schema()
    assert run_scripted(forecast, {"city": "Oslo"}, ScriptedPeer()) == Out(
        answer="sunny"
    )


def test_explicit_options_override_inference() -> None:
    @tool(name="wx.v2", description="d", params=Args, output=Out, title="Weather")
    def forecast(params, ctx):  # type: ignore[no-untyped-def]
        return {"answer": "rain"}

    assert (forecast.name, forecast.description, forecast.title) == (
        "wx.v2",
        "d",
        "Weather",
    )
    # The output adapter validates (and converts) what the tool returns.
    assert run_scripted(forecast, {"city": "x"}, ScriptedPeer()) == Out(answer="rain")


def test_a_tool_taking_only_ctx_has_no_arguments() -> None:
    @tool
    def ping(ctx: Context) -> str:
        return "pong"

    assert ping.input_schema["properties"] == {}
    with pytest.raises(ValidationError):
        ping.parse_arguments({"unexpected": 1})


def test_arguments_are_validated_against_the_params_model() -> None:
    @tool
    def t(params: Args, ctx: Context) -> str:
        return params.city

    with pytest.raises(ValidationError):
        run_scripted(t, {"city": 3}, ScriptedPeer())


def test_a_result_that_breaks_the_output_type_fails_the_call() -> None:
    @tool
    def t(ctx: Context) -> Op[Out]:
        yield ctx.log("info", "x")
        return {"wrong": 1}  # type: ignore[return-value]

    with pytest.raises(TypeError, match="not a valid"):
        run_scripted(t, {}, ScriptedPeer())


def test_the_program_is_the_body_generator_and_finish_checks_the_output() -> None:
    @tool
    def t(ctx: Context) -> Op[Out]:
        yield ctx.log("info", "x")
        return {"answer": "rain"}  # type: ignore[return-value]

    program = t.program(t.parse_arguments({}))
    gen = program(t.context())
    # No wrapper generator: a parked call holds only the tool's own frames.
    assert gen.gi_code.co_name == "t"
    assert program.finish({"answer": "rain"}) == Out(answer="rain")
    with pytest.raises(TypeError, match="not a valid"):
        program.finish({"wrong": 1})


def _asks_twice(ctx: Context) -> Op[str]:
    first = yield from ctx.sample("one?", max_tokens=4)
    second = yield from ctx.sample("two?", max_tokens=4)
    return first.text + second.text


class _Delegate(collections.abc.Generator[Any, Any, str]):
    """A generator that is not a native one: the Generator ABC, by hand."""

    def __init__(self, ctx: Context) -> None:
        self._inner = _asks_twice(ctx)

    def send(self, value: Any) -> Any:
        return self._inner.send(value)

    def throw(self, *args: Any) -> Any:
        return self._inner.throw(*args)


@pytest.mark.parametrize("returns", ["a native generator", "a Generator object"])
def test_a_plain_function_that_returns_a_generator_runs_it_as_the_program(
    returns: str,
) -> None:
    # Not a generator function: what it returns is the program all the same.
    @tool
    def delegating(ctx: Context) -> Op[str]:
        return _asks_twice(ctx) if returns == "a native generator" else _Delegate(ctx)

    peer = ScriptedPeer(samples=[text("a"), text("b")])
    assert run_scripted(delegating, {}, peer) == "ab"


@pytest.mark.parametrize("value", ["text", 3, 2.5, True, None, [1], {"k": "v"}])
def test_a_plain_function_s_value_is_the_result_at_once(value: Any) -> None:
    @tool
    def plain(ctx: Context) -> Any:
        return value

    assert run_scripted(plain, {}, ScriptedPeer()) == value


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "comma,name"])
def test_bad_tool_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidTool, match="1-128 characters"):

        @tool(name=name)
        def t(ctx: Context) -> None:
            return None


def test_params_must_be_a_pydantic_model() -> None:
    with pytest.raises(InvalidTool, match="params= must be a pydantic model"):

        @tool(params=dict)  # type: ignore[arg-type]
        def t(params: dict, ctx: Context) -> None:  # type: ignore[type-arg]
            return None


def test_params_takes_one_parameter_beside_the_context() -> None:
    with pytest.raises(InvalidTool, match=r"takes the model and the context"):

        @tool(params=Args)
        def t(a: Args, b: Context, c: int) -> None:
            return None


def test_handoff_infers_params_from_before_and_output_from_after() -> None:
    def before(params: Args) -> str:
        return params.city

    def client(city: str, ctx: Context) -> Op[int]:
        yield ctx.log("info", city)
        return len(city)

    def after(city: str, n: int) -> Out:
        return Out(answer=f"{city}:{n}")

    t = handoff(before=before, client=client, after=after)
    assert (t.name, t.params, t.output) == ("client", Args, Out)
    assert run_scripted(t, {"city": "Rome"}, ScriptedPeer()) == Out(answer="Rome:4")


def test_handoff_before_must_take_one_model() -> None:
    def before(a: int) -> int:
        return a

    def client(h: int, ctx: Context) -> Op[int]:
        return h
        yield  # pragma: no cover

    with pytest.raises(InvalidTool, match="before must take one parameter"):
        handoff(before=before, client=client, after=lambda h, r: r)


SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"n": {"$anchor": "num", "type": "integer", "minimum": 0}},
    "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"type": "string"}},
    "if": {"required": ["a"]},
    "then": {"required": ["b"]},
    "additionalProperties": False,
}


def test_an_explicit_input_schema_is_advertised_verbatim_and_enforced() -> None:
    @tool(input_schema=SCHEMA)
    def raw(ctx: Context) -> str:
        """Raw schema."""
        return "ok"

    assert raw.input_schema == SCHEMA
    assert raw.input_schema is not raw.input_schema  # a copy each time
    params = raw.parse_arguments({"a": 1, "b": "x"})
    assert params.model_extra == {"a": 1, "b": "x"}
    for bad, problem in (
        ({"a": -1, "b": "x"}, "a: -1 is less than the minimum of 0"),
        ({"a": 1}, "<root>: 'b' is a required property"),
        ({"c": 1}, "<root>: Additional properties are not allowed"),
    ):
        with pytest.raises(InvalidArguments) as info:
            raw.check_arguments(bad)
        assert info.value.problems[0].startswith(problem)
        assert str(info.value).startswith("Invalid arguments for tool 'raw':\n")


class Two(BaseModel):
    a: int
    lines: int = Field(le=10)


def test_check_arguments_names_each_field_and_what_is_wrong() -> None:
    @tool
    def two(params: Two, ctx: Context) -> str:
        return "ok"

    with pytest.raises(InvalidArguments) as info:
        two.check_arguments({"a": "x", "lines": 11})
    assert info.value.problems == (
        "a: Input should be a valid integer, unable to parse string as an integer",
        "lines: Input should be less than or equal to 10",
    )


def test_an_explicit_input_schema_also_feeds_a_params_model() -> None:
    @tool(input_schema={"type": "object", "properties": {"city": {"type": "string"}}})
    def weather(params: Args, ctx: Context) -> str:
        """Weather."""
        return params.city

    assert weather.parse_arguments({"city": "Oslo"}) == Args(city="Oslo")
    with pytest.raises(ValidationError):
        weather.parse_arguments({})


@pytest.mark.parametrize(
    "schema", [{"type": "array"}, {"type": "object", "properties": {"a": {"type": 3}}}]
)
def test_a_malformed_input_schema_is_refused_at_definition(
    schema: dict[str, object],
) -> None:
    with pytest.raises(InvalidTool, match="input_schema"):

        @tool(input_schema=schema)
        def bad(ctx: Context) -> str:
            return ""


@pytest.mark.parametrize(("boolean", "equal"), [(True, "{}"), (False, '{"not": {}}')])
def test_a_boolean_property_schema_is_refused_with_its_object_form(
    boolean: bool, equal: str
) -> None:
    # JSON Schema allows it; MCP's 2025-11-25 Tool.inputSchema does not, so
    # the tool could not be listed to a client of that era.
    schema = {"type": "object", "properties": {"a": boolean}}
    with pytest.raises(InvalidTool) as refused:

        @tool(input_schema=schema)
        def loose(ctx: Context) -> str:
            return ""

    assert str(refused.value) == (
        f"tool 'loose': input_schema.properties['a'] is {boolean}; "
        f"MCP wants an object schema there (write {equal})"
    )


def test_release_stream_is_a_notice_the_executor_sees() -> None:
    from runtime.lowlevel import ReleaseStream

    @tool
    def polls(ctx: Context) -> Op[str]:
        """Releases its stream."""
        yield ctx.release_stream()
        return "done"

    peer = ScriptedPeer()
    assert run_scripted(polls, {}, peer) == "done"
    assert [n for _, n in peer.notices] == [ReleaseStream()]


@pytest.mark.parametrize("elicits", [["name"], "name", [("name", Args)]])
def test_elicits_of_bare_names_is_a_one_line_invalid_tool(elicits: object) -> None:
    with pytest.raises(InvalidTool, match=r"elicits takes ElicitKey values"):

        @tool(elicits=elicits)  # type: ignore[arg-type]
        def t(ctx: Context) -> None:
            return None


def _strict_json(value: object) -> str:
    # What node's JSON.parse and the TypeScript SDK accept: no NaN or Infinity.
    return json.dumps(value, allow_nan=False)


class Bounds(BaseModel):
    tolerance: float = math.nan
    steps: int = 3


def test_a_non_finite_default_is_left_out_of_the_input_schema() -> None:
    @tool
    def search(
        query: str, max_price: float = math.inf, min_price: float = -math.inf
    ) -> str:
        """A limit whose default is no limit."""
        return f"{query} {min_price}..{max_price}"

    @tool
    def fit(params: Bounds, ctx: Context) -> str:
        return str(params.tolerance)

    properties = search.input_schema["properties"]
    assert properties["max_price"] == {"title": "Max Price", "type": "number"}
    assert properties["min_price"] == {"title": "Min Price", "type": "number"}
    assert fit.input_schema["properties"]["steps"]["default"] == 3
    assert "default" not in fit.input_schema["properties"]["tolerance"]
    _strict_json(search.input_schema)
    _strict_json(fit.input_schema)
    # The default still applies to an argument left out.
    assert run_scripted(search, {"query": "tea"}, ScriptedPeer()) == "tea -inf..inf"
    assert run_scripted(fit, {}, ScriptedPeer()) == "nan"


class Priced(BaseModel):
    price: float = math.inf
    currency: str = "EUR"


def test_a_non_finite_default_is_left_out_of_the_output_schema() -> None:
    @tool
    def quote(ctx: Context) -> Priced:
        return Priced()

    schema = quote.output_schema
    assert schema is not None
    assert "default" not in schema["properties"]["price"]
    assert schema["properties"]["currency"]["default"] == "EUR"
    _strict_json(schema)


class Examples(BaseModel):
    limit: float = Field(default=1.0, examples=[math.inf])


class InfiniteMember(float, enum.Enum):
    NONE = 0.0
    ALL = math.inf


def _refused(define: Callable[[], object]) -> str:
    with pytest.raises(InvalidTool) as refused:
        define()
    return str(refused.value)


def test_a_non_finite_number_elsewhere_in_a_schema_is_refused_at_definition() -> None:
    def examples() -> object:
        @tool
        def search(max_price: Annotated[float, Field(examples=[math.inf])]) -> str:
            return ""

        return search

    def member() -> object:
        @tool
        def take(share: InfiniteMember) -> str:
            return ""

        return take

    def explicit() -> object:
        schema = {
            "type": "object",
            "properties": {"n": {"type": "number", "maximum": math.inf}},
        }

        @tool(input_schema=schema)
        def raw(ctx: Context) -> str:
            return ""

        return raw

    def output() -> object:
        @tool
        def sized(ctx: Context) -> Examples:
            return Examples()

        return sized

    assert _refused(examples).startswith(
        "tool 'search', parameter 'max_price': examples[0] is inf, which JSON "
        "cannot carry"
    )
    assert "tool 'take', parameter 'share'" in _refused(member)
    assert "is inf" in _refused(member)
    assert _refused(explicit).startswith(
        "tool 'raw', parameter 'n': maximum is inf, which JSON cannot carry"
    )
    assert _refused(output).startswith(
        "tool 'sized', output schema: properties.limit.examples[0] is inf"
    )


def test_lone_surrogates_in_a_definition_s_text_are_refused_at_definition() -> None:
    def description() -> object:
        @tool(description="bad \ud800 text")
        def a() -> str:
            return "a"

        return a

    def title() -> object:
        @tool(title="bad \udce9")
        def b() -> str:
            return "b"

        return b

    def parameter() -> object:
        @tool
        def c(q: Annotated[str, Field(description="x\ud800y")]) -> str:
            return q

        return c

    assert _refused(description).startswith(
        "tool 'a': description is not valid Unicode: '\\ud800' at index 4 is a "
        "lone surrogate"
    )
    assert _refused(title).startswith(
        "tool 'b': title is not valid Unicode: '\\udce9' at index 4"
    )
    assert _refused(parameter).startswith(
        "tool 'c', parameter 'q': description is not valid Unicode: '\\ud800' "
        "at index 1"
    )
