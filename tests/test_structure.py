"""How the code is built, read from the source: one call core, structured
concurrency, nothing swallowed, one door to the stores.

These are the rules of issue 37 ("One call, one machine"), checked with
:mod:`ast` over ``runtime``, ``bridge``, ``encoders`` and ``decoders``:

* no trio system task: every task lives in a nursery its owner closes (the
  server's run scope, a session, a round);
* no swallowed ``Exception``: no ``except Exception`` (or ``BaseException``,
  or a bare ``except``) whose body only passes, and no
  ``contextlib.suppress(Exception)``;
* a call's life is the :class:`runtime.lowlevel.CallMachine`'s: ``bridge``
  drives no generator by hand (no ``.send()``/``.throw()`` loop) and takes
  no stepper event apart (no ``match`` on them); the one dispatch on the
  machine's commands is :func:`runtime.lowlevel.carry_out`;
* one folder besides ``bridge/stores`` and ``bridge/cli`` talks to the
  stores.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("runtime", "bridge", "encoders", "decoders")
STEPPER_EVENTS = frozenset(
    {"Ask", "Tell", "Withdraw", "StartTimer", "StopTimer", "Finished"}
)


def _sources(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            yield name, ast.parse(path.read_text(), filename=name)


def _attribute_calls(tree: ast.AST, attribute: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == attribute
        ):
            yield node


def test_no_trio_system_task() -> None:
    found = [
        f"{name}:{call.lineno}"
        for name, tree in _sources(*PACKAGES)
        for call in _attribute_calls(tree, "spawn_system_task")
    ]
    assert found == []


def _swallows(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    broad = caught is None or (
        isinstance(caught, ast.Name) and caught.id in {"Exception", "BaseException"}
    )
    quiet = all(
        isinstance(statement, ast.Pass | ast.Continue)
        or (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
        )
        for statement in handler.body
    )
    return broad and quiet


def _suppresses_everything(call: ast.Call) -> bool:
    return any(
        isinstance(arg, ast.Name) and arg.id in {"Exception", "BaseException"}
        for arg in call.args
    )


def test_no_exception_is_swallowed() -> None:
    found: list[str] = []
    for name, tree in _sources(*PACKAGES):
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and _swallows(node):
                found.append(f"{name}:{node.lineno}")
        found += [
            f"{name}:{call.lineno}"
            for call in _attribute_calls(tree, "suppress")
            if _suppresses_everything(call)
        ]
    assert found == []


def _hand_driven_loops(tree: ast.AST) -> Iterator[ast.AST]:
    """Loops that resume a generator by hand: a ``.send()`` or ``.throw()``
    that is not awaited (an awaited one is a channel's)."""
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.While | ast.For):
            continue
        awaited = {
            id(node.value) for node in ast.walk(loop) if isinstance(node, ast.Await)
        }
        for node in ast.walk(loop):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"send", "throw"}
                and id(node) not in awaited
            ):
                yield loop
                break


def test_bridge_drives_no_generator_by_hand() -> None:
    found = [
        f"{name}:{getattr(loop, 'lineno', '?')}"
        for name, tree in _sources("bridge")
        for loop in _hand_driven_loops(tree)
    ]
    assert len(found) <= 1, found


def _matches_on_stepper_events(tree: ast.AST) -> Iterator[ast.Match]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Match):
            continue
        names = {
            pattern.cls.id
            for case in node.cases
            for pattern in ast.walk(case.pattern)
            if isinstance(pattern, ast.MatchClass) and isinstance(pattern.cls, ast.Name)
        }
        if names & STEPPER_EVENTS:
            yield node


def test_bridge_takes_no_stepper_event_apart() -> None:
    found = [
        f"{name}:{match.lineno}"
        for name, tree in _sources("bridge")
        for match in _matches_on_stepper_events(tree)
    ]
    assert len(found) <= 1, found


def _importers_of_the_stores() -> set[str]:
    """The folders of ``bridge`` (besides the stores' own and the CLI's) with
    a module that imports ``bridge.stores``."""
    folders: set[str] = set()
    for name, tree in _sources("bridge"):
        folder = str(Path(name).parent)
        if folder.startswith(("bridge/stores", "bridge/cli")):
            continue
        for node in ast.walk(tree):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if isinstance(node, ast.Import):
                module = next(
                    (a.name for a in node.names if a.name.startswith("bridge.stores")),
                    None,
                )
            if module is not None and module.startswith("bridge.stores"):
                folders.add(folder)
    return folders


def test_one_folder_talks_to_the_stores() -> None:
    assert _importers_of_the_stores() == {"bridge/durable"}


def test_the_checks_see_what_they_look_for() -> None:
    source = """
import contextlib
import trio

async def bad(gen, nursery):
    trio.lowlevel.spawn_system_task(gen)
    try:
        pass
    except Exception:
        pass
    with contextlib.suppress(Exception):
        pass
    while True:
        gen.send(None)
    async with channel:
        while True:
            await channel.send(1)
    match event:
        case Ask(key, question):
            pass
"""
    tree = ast.parse(source)
    assert len(list(_attribute_calls(tree, "spawn_system_task"))) == 1
    handlers = [n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)]
    assert [_swallows(h) for h in handlers] == [True]
    suppress = list(_attribute_calls(tree, "suppress"))
    assert [_suppresses_everything(c) for c in suppress] == [True]
    assert len(list(_hand_driven_loops(tree))) == 1  # the awaited send is not
    assert len(list(_matches_on_stepper_events(tree))) == 1
