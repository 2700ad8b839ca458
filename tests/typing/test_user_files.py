"""pyright on a user's own file, outside the repository, after the README set-up.

The README promises that pyright infers each effect's result type; that needs
pyright to find ``runtime`` in the environment the README's command made.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = """
from pydantic import BaseModel
from runtime import Context, ElicitKey, Op, tool


class Confirm(BaseModel):
    ok: bool


CONFIRM = ElicitKey("confirm", Confirm)


@tool(elicits=[CONFIRM])
def plan(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(CONFIRM, "Book it?")
    reveal_type(answer)
    return "booked"
"""


def test_pyright_resolves_runtime_from_a_file_outside_the_repository(
    tmp_path: Path,
) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("pyright is in the [dev] extra")
    (tmp_path / "my_tool.py").write_text(TOOL, encoding="utf-8")
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "my_tool.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # no pyproject.toml of ours in sight
        timeout=300,
    )
    assert "0 errors" in done.stdout, (
        "pyright cannot follow this install; set up with the README's command\n"
        + done.stdout
    )
    assert 'Type of "answer" is "ElicitResult[Confirm]"' in done.stdout, done.stdout


MISTAKES = """
from pydantic import BaseModel
from runtime import Context, ElicitKey, Op, tool


class Confirm(BaseModel):
    ok: bool


CONFIRM = ElicitKey("confirm", Confirm)


@tool(elicits=[CONFIRM])
def forgets(ctx: Context) -> Op[str]:
    answer = ctx.elicit(CONFIRM, "Book it?")
    yield ctx.log("info", "asked")
    return str(answer.content)


@tool
async def awaits(ctx: Context) -> str:
    reply = await ctx.sample("hi")
    return str(reply)
"""


def test_pyright_still_flags_the_mistakes_the_runtime_hints_name(
    tmp_path: Path,
) -> None:
    # Effects explain a missing `yield from` and an `await` at run time
    # (runtime/effects/base.py); the type checker must not take those hooks
    # for real attributes, or it would stop flagging both mistakes.
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("pyright is in the [dev] extra")
    (tmp_path / "mistakes.py").write_text(MISTAKES, encoding="utf-8")
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "mistakes.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert 'Cannot access attribute "content" for class "Elicit' in done.stdout, (
        done.stdout
    )
    assert '"Sample[None]" is not awaitable' in done.stdout, done.stdout
