"""Running store code in another OS process, for the cross-process tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from bridge.stores import StoreError, StoreUnavailable, StoreUnreadable
from tests.helpers import ROOT


def start_python(code: str, *args: str) -> subprocess.Popen[str]:
    """Start ``python -c code args...`` from the repository root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> str:
    """Wait for the process; its stdout. Fails the test when it failed."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out


def assert_stream_unreadable(calls: Iterable[Callable[[], Any]], said: str) -> None:
    """Each of ``calls`` raises StoreUnreadable of a stream (a damaged one,
    never taken for an outage), in one short line holding ``said``."""
    for call in calls:
        with pytest.raises(StoreUnreadable) as raised:
            call()
        assert isinstance(raised.value, StoreError)
        assert not isinstance(raised.value, StoreUnavailable)
        assert raised.value.part == "stream"
        text = str(raised.value)
        assert said in text
        assert "\n" not in text
        assert len(text) < 200, text
