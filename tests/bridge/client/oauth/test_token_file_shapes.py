"""A token file that is not what ``FileTokenStore`` writes, or not a file at
all: one line naming it (an ``AuthorizationError``), never a ``TypeError``
and never a hang on a FIFO."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from bridge.client.oauth import FileTokenStore
from runtime.errors import AuthorizationError

RESOURCE = "https://mcp/mcp"
ISSUER = "https://as"


def planted(tmp_path: Path, content: object) -> Path:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / "tokens.json"
    path.write_text(json.dumps(content))
    path.chmod(0o600)
    return path


async def load_all(store: FileTokenStore) -> None:
    store.check()
    await store.load_tokens(RESOURCE)
    await store.load_client(ISSUER)


@pytest.mark.parametrize(
    "content",
    [
        {"tokens": 5},
        {"tokens": "ab"},
        {"tokens": [1, 2]},
        {"clients": True},
        {"tokens": {RESOURCE: 5}},
        {"tokens": {RESOURCE: "at-1"}},
        {"tokens": {RESOURCE: {"access_token": "at-1"}}},  # no issuer
        {"tokens": {RESOURCE: {"access_token": 5, "issuer": ISSUER}}},
        {"tokens": {RESOURCE: {"access_token": "a", "issuer": ISSUER, "x": 1}}},
        {
            "tokens": {
                RESOURCE: {"access_token": "a", "issuer": ISSUER, "expires_at": "soon"}
            }
        },
        # past what a clock can add: an OverflowError traceback, every call
        {
            "tokens": {
                RESOURCE: {"access_token": "a", "issuer": ISSUER, "expires_at": 10**400}
            }
        },
        # not a header value: every request failed, and no 401 came to mend it
        {"tokens": {RESOURCE: {"access_token": "a\r\nX: 1", "issuer": ISSUER}}},
        {"tokens": {RESOURCE: {"access_token": "tok-\u00e9", "issuer": ISSUER}}},
        {"clients": {ISSUER: {"client_id": "c", "auth_method": "magic"}}},
        {"clients": {ISSUER: {"client_id": "c", "portable": "yes"}}},
        [],
        5,
    ],
)
async def test_a_token_file_of_another_shape_is_one_line_naming_it(
    tmp_path: Path, content: object
) -> None:
    path = planted(tmp_path, content)
    store = FileTokenStore(path)
    with pytest.raises(AuthorizationError) as caught:
        await load_all(store)
    message = str(caught.value)
    assert str(path) in message
    assert "is not a token file" in message
    assert "\n" not in message


async def test_a_token_file_of_the_right_shape_still_loads(tmp_path: Path) -> None:
    entry = {"access_token": "at-1", "issuer": ISSUER, "expires_at": 12}
    client = {"client_id": "c", "auth_method": "client_secret_post", "portable": True}
    store = FileTokenStore(
        planted(tmp_path, {"tokens": {RESOURCE: entry}, "clients": {ISSUER: client}})
    )
    tokens = await store.load_tokens(RESOURCE)
    found = await store.load_client(ISSUER)
    assert tokens is not None
    assert tokens.access_token == "at-1"
    assert found is not None
    assert found.portable


def test_a_fifo_in_the_files_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o700)
    path = folder / "tokens.json"
    os.mkfifo(path, 0o600)
    raised: list[BaseException] = []

    def check() -> None:
        try:
            FileTokenStore(path).check()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=check, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock it: a writer lets the open return
        with open(path, "wb"):
            pass
        thread.join(5)
        pytest.fail("opening the token file waited on a FIFO")
    assert len(raised) == 1
    assert isinstance(raised[0], AuthorizationError)
    assert str(path) in str(raised[0])
    assert "\n" not in str(raised[0])


def test_a_folder_in_the_files_place_is_refused_in_one_line(tmp_path: Path) -> None:
    # os.fdopen raised IsADirectoryError before the file's kind was looked
    # at: yieldmcp call --oauth-tokens DIR ended in a traceback.
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o700)
    path = folder / "tokens.json"
    path.mkdir(mode=0o700)
    with pytest.raises(AuthorizationError, match="is not a file of yours") as refused:
        FileTokenStore(path).check()
    assert "\n" not in str(refused.value)
