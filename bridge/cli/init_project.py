"""``yieldmcp init [DIR]``: a small project to start from.

It writes, into an empty (or new) DIR:

* ``pyproject.toml``, depending on yieldmcp: on the checkout this command runs
  from (a ``file://`` URL) when yieldmcp is installed editable from one, else
  on the package by name; a ``test`` extra (yieldmcp's ``[test]``, pytest);
* ``tools.py``: a tool that asks the user to confirm (a form) and then saves
  in a step (its side effect runs once per call, replays included);
* ``tests/test_tools.py``: a test with ``ScriptedPeer`` and one with
  Hypothesis drawing every kind of answer;
* ``README.md``: how to test it, serve it, call it and install it in a host.

A DIR with anything in it is refused (:class:`InitError`), so nothing of the
user's is ever overwritten; so is a DIR of another user's, or one everyone may
write to (without the sticky bit), where a link could be swapped in while
init writes. Files are created new (``O_EXCL``), relative to DIR opened
once, following no link.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Generator
from importlib import metadata
from pathlib import Path
from typing import Any, cast

__all__ = ["InitError", "dependency", "make_project"]


class InitError(Exception):
    """DIR cannot be made into a project (one line)."""


def dependency() -> str:
    """How the new project names yieldmcp: ``yieldmcp @ file:///...`` for an
    editable install (the checkout it runs from), else ``yieldmcp``.

    Every installed copy's metadata is read: run from the checkout itself,
    its ``yieldmcp.egg-info`` comes first on the path, and only the install's
    ``direct_url.json`` (PEP 610) says it is editable, and from where."""
    for found in metadata.distributions(name="yieldmcp"):
        url = _editable_url(found.read_text("direct_url.json"))
        if url is not None:
            return f"yieldmcp @ {url}"
    return "yieldmcp"


def _editable_url(text: str | None) -> str | None:
    if not text:
        return None
    try:
        origin: Any = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(origin, dict):
        return None
    fields = cast("dict[str, Any]", origin)
    url, info = fields.get("url"), fields.get("dir_info")
    editable = isinstance(info, dict) and cast("dict[str, Any]", info).get("editable")
    if isinstance(url, str) and url.startswith("file://") and editable is True:
        return url
    return None


def _project_name(folder: Path) -> str:
    """A distribution name from the folder's (PEP 508: letters, digits, -_.)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-._")
    return name.lower() or "my-tools"


def make_project(folder: Path, depends_on: str | None = None) -> list[Path]:
    """Write the project into ``folder`` (made if missing); the files written.

    ``folder``, when it is there, must be yours and not writable by everyone
    (a sticky folder such as ``/tmp`` aside): another user could otherwise
    swap a symbolic link in for ``tests`` between the check that it is empty
    and the writes. The files and ``tests`` are made relative to the folder
    opened once, exclusively and without following links.

    Raises:
        InitError: ``folder`` is a file, is not empty, is another user's or
            writable by everyone, or cannot be written.
    """
    from .host_options import shown

    name = shown(folder, cut=None)  # as typed, its controls escaped: one line
    try:
        if folder.is_symlink() and not folder.exists():
            raise InitError(
                f"{name} is a symbolic link to nothing ({shown(os.readlink(folder))})"
            )
        if folder.exists() and not folder.is_dir():
            raise InitError(f"{name} is a file, not a folder")
    except OSError as exc:  # too long a name, a folder that cannot be read
        raise InitError(f"cannot use {name}: {exc.strerror or exc}") from None
    requirement = dependency() if depends_on is None else depends_on
    extra = requirement.replace("yieldmcp", "yieldmcp[test]", 1)
    made: list[Path] = []  # DIR and the folders above it made here, in order
    try:
        for parent in reversed((folder, *folder.parents)):
            if not (parent.is_symlink() or parent.exists()):
                parent.mkdir()  # never one someone made meanwhile
                made.append(parent)
        project = _project_name(Path(os.path.realpath(folder)))
        files = {
            "pyproject.toml": _PYPROJECT.format(
                name=project,
                dependency=json.dumps(requirement),
                test_dependency=json.dumps(extra),
            ),
            "tools.py": _TOOLS,
            "tests/test_tools.py": _TESTS,
            "README.md": _README.format(name=project),
        }
        with _opened(folder, made=bool(made) and made[-1] == folder) as at:
            _refuse_others(name, os.fstat(at))
            _refuse_not_empty(name, at)
            return [folder / relative for relative in _write(at, files)]
    except _Failed as failed:
        exc, where = failed.args
        _remove(made)
        shown_where = "" if where is None else f" ({shown(folder / where)})"
        raise InitError(
            f"cannot write {name}: {exc.strerror or exc}{shown_where}"
        ) from None
    except OSError as exc:  # DIR, or a folder above it, cannot be made
        _remove(made)
        failed = exc.filename  # the file or folder of the failure, if said
        where = "" if failed in (None, str(folder)) else f" ({shown(failed)})"
        raise InitError(f"cannot write {name}: {exc.strerror or exc}{where}") from None
    except InitError:
        _remove(made)
        raise


class _Failed(Exception):
    """An ``OSError`` writing one of the files (``args``: it, and the file or
    folder, relative to DIR), all that was made of them already removed."""


_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
)


@contextlib.contextmanager
def _opened(folder: Path, *, made: bool) -> Generator[int]:
    """DIR open: through a link the user named, but not through one put in
    place of a folder made here."""
    handle = os.open(folder, _FOLDER | (_NOFOLLOW if made else 0))
    try:
        yield handle
    finally:
        os.close(handle)


def _refuse_others(name: str, found: os.stat_result) -> None:
    """Refuse a DIR another user could change under init: not this user's,
    or writable by everyone without the sticky bit (which keeps
    others from renaming what init makes there). The rule ``--oauth-tokens``
    applies to its folder (:mod:`bridge.client.oauth.store`), whose check is
    private to that store: the idea is the same, not the code."""
    if found.st_uid != os.geteuid():
        raise InitError(
            f"{name} belongs to another user (uid {found.st_uid}): init writes "
            "only into a folder of yours"
        )
    # Its group may write it: with a umask of 002, every folder a user makes
    # is (their own group's, on systems with a group per user).
    if found.st_mode & stat.S_IWOTH and not found.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(found.st_mode)
        raise InitError(
            f"{name} is writable by everyone (mode {mode:o}): chmod o-w it, or "
            "init a folder of its own"
        )


def _refuse_not_empty(name: str, at: int) -> None:
    if os.listdir(at):
        raise InitError(f"{name} is not empty: init writes into a new or empty folder")


def _write(at: int, files: dict[str, str]) -> list[str]:
    """Each file made new under the folder open as ``at`` (``tests`` made
    too), none over anything there and no link followed; on a failure, what
    was made goes (:class:`_Failed`)."""
    made: list[tuple[int, str, bool]] = []  # (folder, name, is a folder)
    folders: dict[str, int] = {"": at}
    written: list[str] = []
    relative = ""
    try:
        for relative, text in files.items():
            parent, _, leaf = relative.rpartition("/")
            if parent not in folders:
                os.mkdir(parent, 0o777, dir_fd=at)
                made.append((at, parent, True))
                folders[parent] = os.open(parent, _FOLDER | _NOFOLLOW, dir_fd=at)
            handle = os.open(leaf, _NEW_FILE, 0o666, dir_fd=folders[parent])
            made.append((folders[parent], leaf, False))
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            written.append(relative)
    except OSError as exc:
        # A full disk, say: what was written goes, so that init can be run
        # again (it refuses a folder that is not empty).
        for where, entry, is_folder in reversed(made):
            with contextlib.suppress(OSError):
                if is_folder:
                    os.rmdir(entry, dir_fd=where)
                else:
                    os.unlink(entry, dir_fd=where)
        raise _Failed(exc, relative) from None
    finally:
        for handle in list(folders.values())[1:]:
            os.close(handle)
    return written


def _remove(made: list[Path]) -> None:
    """The folders made for DIR, if still empty."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            path.rmdir()


_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "MCP tools written with yieldmcp"
requires-python = ">=3.11"
dependencies = [{dependency}]

[project.optional-dependencies]
test = [{test_dependency}, "pytest>=8"]

[tool.setuptools]
py-modules = ["tools"]

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]

# `yieldmcp serve` reads its options here (any flag, by its long name):
[tool.yieldmcp]
# http = "127.0.0.1:8000"
# model = "offline"
"""

_TOOLS = '''\
"""The tools this project serves: `yieldmcp serve tools.py`."""

from __future__ import annotations

from pydantic import BaseModel, Field
from runtime import Context, ElicitKey, Op, tool


class Confirm(BaseModel):
    ok: bool = Field(title="Save it?")


CONFIRM = ElicitKey("confirm", Confirm)

NOTES: list[str] = []
"""Where notes go: a stand-in for a database or an API."""


def save_note(text: str) -> str:
    """The side effect. It runs in a step: once per call, even when a
    2026-07-28 call runs the tool again to resume it after the form."""
    NOTES.append(text)
    return f"note {len(NOTES)}"


@tool(elicits=[CONFIRM])
def take_note(text: str, ctx: Context) -> Op[str]:
    """Save a note, once the user confirms it."""
    answer = yield from ctx.elicit(CONFIRM, f"Save the note {text!r}?")
    if answer.content is None or not answer.content.ok:
        return "not saved"  # declined, cancelled, or "no": all plain values
    saved = yield from ctx.step(save_note, text)
    yield ctx.log("info", f"saved {saved}")
    return f"saved as {saved}"
'''

_TESTS = '''\
"""The tools, run against scripted answers: no server, network or model."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime.testing import ScriptedPeer, accept, decline, run_scripted
from runtime.testing.strategies import elicit_replies

import tools


def test_a_confirmed_note_is_saved_once() -> None:
    tools.NOTES.clear()
    peer = ScriptedPeer(elicits={"confirm": [accept(ok=True)]})
    assert run_scripted(tools.take_note, {"text": "milk"}, peer) == "saved as note 1"
    assert tools.NOTES == ["milk"]
    assert [asked.key for asked in peer.asked] == ["0"]


def test_a_declined_note_is_not_saved() -> None:
    tools.NOTES.clear()
    peer = ScriptedPeer(elicits={"confirm": [decline()]})
    assert run_scripted(tools.take_note, {"text": "milk"}, peer) == "not saved"
    assert tools.NOTES == []


# A tool run per example is slower than Hypothesis expects on a busy machine.
PATIENT = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PATIENT
@given(data=st.data(), text=st.text(max_size=30))
def test_any_valid_answer_saves_the_note_at_most_once(
    data: st.DataObject, text: str
) -> None:
    tools.NOTES.clear()
    peer = ScriptedPeer(
        elicits={
            "confirm": lambda question: data.draw(elicit_replies(question, valid=True))
        }
    )
    result = run_scripted(tools.take_note, {"text": text}, peer)
    if result == "not saved":
        assert tools.NOTES == []
    else:
        assert result == "saved as note 1"
        assert tools.NOTES == [text]
'''

_README = """\
# {name}

MCP tools written with yieldmcp: each tool is a generator that `yield`s what
it needs (a form, a model's answer, a step).

```bash
python3 -m venv .venv
.venv/bin/pip install -e ".[test]"
.venv/bin/pytest                                  # tests/test_tools.py
.venv/bin/yieldmcp serve tools.py                 # MCP over stdio
.venv/bin/yieldmcp call "yieldmcp serve tools.py" # list the tools
.venv/bin/yieldmcp call "yieldmcp serve tools.py" take_note --arg text=milk
.venv/bin/yieldmcp install claude-desktop tools.py   # or cursor, vscode
```

- `tools.py`: `take_note` asks the user to confirm (`ctx.elicit`), then saves
  the note in a step (`ctx.step`), which runs once per call even when the
  call is resumed.
- `tests/test_tools.py`: the tool against scripted answers (`ScriptedPeer`),
  and against every kind of answer Hypothesis can draw.
- `pyproject.toml`: `[tool.yieldmcp]` holds `yieldmcp serve`'s options.
"""
