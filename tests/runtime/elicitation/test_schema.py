"""Elicitation forms: pydantic models mapped onto MCP's flat form schemas."""

from __future__ import annotations

import enum
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from runtime import tool
from runtime.lowlevel import InvalidTool, elicitation_schema


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Form(BaseModel):
    name: str = Field(min_length=1, max_length=20, description="Your name")
    email: str = Field(json_schema_extra={"format": "email"})
    age: int = Field(ge=0, le=150, default=30)
    score: float
    subscribed: bool = False
    colour: Colour
    size: Literal["s", "m", "l"] = "m"
    nickname: str | None = None
    tags: list[Literal["a", "b"]] = Field(default_factory=list, min_length=1)


def test_a_flat_model_maps_to_mcp_primitive_schemas() -> None:
    assert elicitation_schema(Form) == {
        "type": "object",
        "properties": {
            "name": {
                "type": "string", "title": "Name", "description": "Your name",
                "minLength": 1, "maxLength": 20,
            },
            "email": {"type": "string", "title": "Email", "format": "email"},
            "age": {
                "type": "integer", "title": "Age", "minimum": 0, "maximum": 150,
                "default": 30,
            },
            "score": {"type": "number", "title": "Score"},
            "subscribed": {"type": "boolean", "title": "Subscribed", "default": False},
            "colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]},
            "size": {"type": "string", "title": "Size", "default": "m",
                     "enum": ["s", "m", "l"]},
            "nickname": {"type": "string", "title": "Nickname"},
            "tags": {"type": "array", "title": "Tags", "minItems": 1,
                     "items": {"type": "string", "enum": ["a", "b"]}},
        },
        "required": ["name", "email", "score", "colour"],
    }  # fmt: skip


def test_dates_keep_their_format() -> None:
    import datetime as dt

    class When(BaseModel):
        day: dt.date

    assert elicitation_schema(When)["properties"]["day"] == {
        "type": "string", "title": "Day", "format": "date",
    }  # fmt: skip


class Inner(BaseModel):
    x: int


@pytest.mark.parametrize(
    "annotation",
    [Inner, list[int], dict[str, str], int | str, list[Inner]],
    ids=["nested-model", "list-of-int", "dict", "union", "list-of-models"],
)
def test_non_flat_fields_are_refused_at_definition(annotation: object) -> None:
    Bad = type("Bad", (BaseModel,), {"__annotations__": {"field": annotation}})

    with pytest.raises(InvalidTool, match=r"elicits\['bad'\].*Bad.field"):

        @tool(elicits={"bad": Bad})
        def t(ctx: object) -> None:
            return None


def test_enums_must_have_string_values() -> None:
    class Numbers(BaseModel):
        n: Literal[1, 2]

    with pytest.raises(InvalidTool, match="string values"):
        elicitation_schema(Numbers)


def test_elicits_values_must_be_models() -> None:
    with pytest.raises(InvalidTool, match="pydantic model classes"):
        elicitation_schema(dict)  # type: ignore[arg-type]


class Titled(BaseModel):
    legacy: str = Field(json_schema_extra={"enum": ["s", "l"], "enumNames": ["S", "L"]})
    picks: list[str] = Field(
        json_schema_extra={
            "items": {
                "anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]
            }
        }
    )


def test_legacy_enum_names_and_titled_multi_select_are_kept() -> None:
    schema = elicitation_schema(Titled)
    assert schema["properties"]["legacy"] == {
        "type": "string",
        "title": "Legacy",
        "enum": ["s", "l"],
        "enumNames": ["S", "L"],
    }
    assert schema["properties"]["picks"] == {
        "type": "array",
        "title": "Picks",
        "items": {
            "anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]
        },
    }


@pytest.mark.parametrize(
    "extra",
    [
        {"enum": ["s", "l"], "enumNames": ["S"]},
        {"enum": ["s", "l"], "enumNames": [1, 2]},
    ],
)
def test_enum_names_must_match_the_values(extra: dict[str, object]) -> None:
    class Bad(BaseModel):
        size: str = Field(json_schema_extra=extra)  # type: ignore[arg-type]

    with pytest.raises(InvalidTool, match=r"Bad\.size"):
        elicitation_schema(Bad)


@pytest.mark.parametrize(
    "items",
    [
        {"anyOf": []},
        {"anyOf": [{"const": "a"}]},
        {"anyOf": [{"const": 1, "title": "x"}]},
    ],
)
def test_titled_multi_select_options_need_const_and_title(items: object) -> None:
    class Bad(BaseModel):
        picks: list[str] = Field(json_schema_extra={"items": items})  # type: ignore[dict-item]

    with pytest.raises(InvalidTool, match=r"Bad\.picks"):
        elicitation_schema(Bad)


@pytest.mark.parametrize("field", ["password", "api_key", "card_number", "secret"])
def test_forms_refuse_fields_that_look_like_secrets(field: str) -> None:
    Form = type("Form", (BaseModel,), {"__annotations__": {field: str}})
    with pytest.raises(InvalidTool, match="elicit_url"):
        elicitation_schema(Form)


def test_forms_refuse_secret_types() -> None:
    from pydantic import SecretStr

    class Login(BaseModel):
        user: str
        credential: SecretStr

    with pytest.raises(InvalidTool, match="looks like a secret"):
        elicitation_schema(Login)


def test_a_non_finite_default_is_left_out_of_a_form() -> None:
    class Budget(BaseModel):
        most: float = float("inf")
        least: float = 0.0

    properties = elicitation_schema(Budget)["properties"]
    assert properties["most"] == {"type": "number", "title": "Most"}
    assert properties["least"]["default"] == 0.0


def test_other_non_finite_numbers_and_lone_surrogates_in_a_form_are_refused() -> None:
    class Unbounded(BaseModel):
        most: float = Field(json_schema_extra={"maximum": float("inf")})

    class Garbled(BaseModel):
        name: str = Field(description="x\udce9")

    with pytest.raises(InvalidTool) as unbounded:

        @tool(elicits={"budget": Unbounded})
        def t(ctx: object) -> None:
            return None

    assert str(unbounded.value).startswith(
        "tool 't', elicits['budget']: Unbounded.most: maximum is inf, which JSON "
        "cannot carry"
    )
    with pytest.raises(InvalidTool, match=r"Garbled.name: description is not valid"):
        elicitation_schema(Garbled)
