"""The one place exceptions become JSON-RPC errors: what the peer is told,
and what the log keeps."""

from __future__ import annotations

import logging

import pytest

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import INTERNAL_ERROR
from bridge.stores import StoreUnavailable


def test_a_store_failure_is_an_internal_error_that_says_so_and_no_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A store outage while a task was being made logged a full traceback at
    # ERROR, and told the client only "Internal error".
    failed = StoreUnavailable("cannot reach postgresql://postgres@10.0.0.7:5433/x")
    with caplog.at_level(logging.INFO, logger="yieldmcp"):
        told = error_data(failed)
    assert told.code == INTERNAL_ERROR
    assert told.message == "Internal error: the server's store failed; try again"
    [record] = caplog.records
    assert record.levelname == "WARNING"
    assert record.exc_info is None
    assert "10.0.0.7:5433" in record.getMessage()  # the operator's, not the peer's


def test_anything_else_is_an_opaque_internal_error_with_its_traceback_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="yieldmcp"):
        told = error_data(RuntimeError("password=hunter2"))
    assert (told.code, told.message) == (INTERNAL_ERROR, "Internal error")
    [record] = caplog.records
    assert record.levelname == "ERROR"
    assert record.exc_info is not None
