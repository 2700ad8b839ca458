"""Elicitation: the questions for the client's user and host.

Owns the :class:`Elicit` (a form), :class:`ElicitUrl` (a flow completed out of
band) and :class:`ListRoots` effects (``effects``), and the mapping of a
pydantic model onto MCP's flat form ``requestedSchema`` (``schema``), refused
at tool-definition time when it does not fit.

It does not decide which key a form is asked under (the context does), check a
reply's wire shape (``decoders``) or answer a form (``bridge.elicit``).
"""

from .effects import Elicit as Elicit
from .effects import ElicitUrl as ElicitUrl
from .effects import ListRoots as ListRoots
from .schema import elicitation_schema as elicitation_schema

__all__ = ["Elicit", "ElicitUrl", "ListRoots", "elicitation_schema"]
