"""MCP wire encoding (moved to _mcp_requests.py; re-exported)."""

from ._mcp_requests import ERAS as ERAS
from ._mcp_requests import Era as Era
from ._mcp_requests import ResultBlock as ResultBlock
from ._mcp_requests import elicit_result as elicit_result
from ._mcp_requests import elicitation_params as elicitation_params
from ._mcp_requests import sample_result as sample_result
from ._mcp_requests import sampling_params as sampling_params
from ._mcp_requests import tool_definition as tool_definition
from ._mcp_requests import tool_error as tool_error
from ._mcp_requests import tool_result as tool_result

__all__ = [
    "ERAS",
    "Era",
    "ResultBlock",
    "elicit_result",
    "elicitation_params",
    "sample_result",
    "sampling_params",
    "tool_definition",
    "tool_error",
    "tool_result",
]
