"""The ``yieldmcp`` command line: argument parsing and the terminal console.

Owns: the verbs ``serve``, ``call``, ``demo``, ``dev``, ``init``, ``install``,
``completion``, ``journal`` and ``tasks`` (:mod:`.commands`; a journal out
of a store in :mod:`.journal_export`; coming back to a task by its id:
:mod:`.tasks_cmd`; ``dev``'s page and its HTTP app:
:mod:`.dev`, the page's files in ``dev_page/``; a new project in
:mod:`.init_project`, a host's MCP configuration in :mod:`.install_host`, the
shell scripts in :mod:`.completion`, made from the parser read by
:mod:`.argtree`), ``serve``'s configuration file (:mod:`.config_file`),
``serve -v``'s line per request (:mod:`.request_log`), the ``serve`` flag of
every limit (:mod:`.limits`), ``serve --http --workers N`` (:mod:`.workers`: N
processes on one port, their start and stop), finding what to serve in a file
or module (:mod:`.loader`), loading it again when it changes (``serve
--reload``: :mod:`.reload`), and the terminal host that shows a call's logs,
progress and result (:mod:`.console`), standard output that fails as one
line (:mod:`.output`): presentation and exit codes; and the
demo's game, ``play_ttt`` (:mod:`.ttt`), shipped in the package so ``yieldmcp
demo`` runs from any install.

Does not own: any protocol work. It composes the other subpackages (server,
client, providers, elicit) and nothing imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``yieldmcp`` command; its exit status.

    The command's modules are imported here, not above, so that a Ctrl-C
    while they load (seconds on a busy machine) is also a quiet exit 130.
    """
    try:
        from .commands import main as run
    except KeyboardInterrupt:
        return 130
    return run(argv)
