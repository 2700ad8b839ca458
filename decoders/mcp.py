"""MCP wire decoding (moved to _mcp_requests.py; re-exported)."""

from ._mcp_requests import ResultBlock as ResultBlock
from ._mcp_requests import ToolCallResult as ToolCallResult
from ._mcp_requests import call_tool_result as call_tool_result
from ._mcp_requests import elicit_reply as elicit_reply
from ._mcp_requests import elicitation_request as elicitation_request
from ._mcp_requests import form_reply as form_reply
from ._mcp_requests import sample_reply as sample_reply
from ._mcp_requests import sampling_request as sampling_request

__all__ = [
    "ResultBlock",
    "ToolCallResult",
    "call_tool_result",
    "elicit_reply",
    "elicitation_request",
    "form_reply",
    "sample_reply",
    "sampling_request",
]
