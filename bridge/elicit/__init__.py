"""Elicitation handlers: how a host answers a tool's forms and URL requests.

An :class:`ElicitationHandler` turns an ``ElicitationRequest`` into an
``ElicitReply`` (accept with content, decline, cancel). Three come with
yieldmcp, and compose:

* :class:`TerminalForm` asks a person at a terminal, one prompt per field, with
  defaults, validation and re-prompting; ``:decline``, ``:cancel`` (or Ctrl-D)
  and ``:skip`` work at any prompt. URL mode asks for consent and never opens
  anything.
* :class:`KeyedHandlers` routes forms by elicitation key to typed handlers,
  ``handlers.on(PICK_MOVE, lambda request, ctx: UserMove(cell=4))``, falling
  back to another handler.
* :class:`ScriptedAnswers` answers from a dict or a JSON file, for CI and
  non-interactive runs.

:class:`Always` gives one fixed answer. This package does no JSON-RPC: the MCP
client and the in-process host (``bridge.host``) call ``handle``.

:func:`printable` strips terminal control sequences from a peer's text (and
:func:`printable_line` also puts it on one line, and cuts it: a name, a
title, a choice at :data:`MAX_LINE_SHOWN` characters): the terminal form
shows every message, title and description through them, and ``bridge.cli``
prints every result, error and log through them.
"""

from bridge.printable import MAX_LINE_SHOWN as MAX_LINE_SHOWN
from bridge.printable import cut as cut
from bridge.printable import printable as printable
from bridge.printable import printable_line as printable_line

from ._fields import describe_form as describe_form
from ._handler import Always as Always
from ._handler import ElicitationHandler as ElicitationHandler
from ._handler import form_defaults as form_defaults
from ._keyed import KeyedHandlers as KeyedHandlers
from ._scripted import ANY_KEY as ANY_KEY
from ._scripted import URL_KEY as URL_KEY
from ._scripted import ScriptedAnswers as ScriptedAnswers
from ._stdin import read_stdin_line as read_stdin_line
from ._terminal import CANCEL as CANCEL
from ._terminal import DECLINE as DECLINE
from ._terminal import SKIP as SKIP
from ._terminal import ReadLine as ReadLine
from ._terminal import TerminalForm as TerminalForm
from ._terminal import Write as Write
from ._terminal import line_reader as line_reader
from ._terminal import stdin_line as stdin_line

__all__ = [
    "read_stdin_line",
    "describe_form",
    "ANY_KEY",
    "MAX_LINE_SHOWN",
    "CANCEL",
    "DECLINE",
    "SKIP",
    "URL_KEY",
    "Always",
    "ElicitationHandler",
    "KeyedHandlers",
    "ReadLine",
    "ScriptedAnswers",
    "TerminalForm",
    "Write",
    "cut",
    "form_defaults",
    "line_reader",
    "printable",
    "printable_line",
    "stdin_line",
]
