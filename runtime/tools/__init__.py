"""Tools: defining them (``@tool``, ``handoff``) and the value a definition makes.

Owns the decorator and builder that check a definition once, when it is made
(``define``), the :class:`Tool` value with its :class:`Program` and what a call
needs of it: arguments validated, result checked (``value``), and the reading
of a tool function's signature into its arguments model (``signature``).

It does not run tools (:mod:`runtime.call`), build the steps an ``async def``
tool or a ``before`` becomes (:mod:`runtime.steps`), or spell tools for MCP
(``encoders``).
"""

from .define import Program as Program
from .define import Tool as Tool
from .define import handoff as handoff
from .define import tool as tool
from .value import TaskFrom as TaskFrom
from .value import TaskSupport as TaskSupport

__all__ = ["Program", "TaskFrom", "TaskSupport", "Tool", "handoff", "tool"]
