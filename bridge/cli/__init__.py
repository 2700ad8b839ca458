"""The ``yieldmcp`` command line: argument parsing and the terminal console.

Owns: the verbs ``serve``, ``call`` and ``demo`` (:mod:`.commands`), the
``serve`` flag of every limit (:mod:`.limits`), ``serve --http --workers N``
(:mod:`.workers`: N processes on one port, their start and stop), finding
what to serve in a file or module (:mod:`.loader`), and the terminal host
that shows a call's logs, progress and result (:mod:`.console`): presentation
and exit codes; and the demo's game, ``play_ttt`` (:mod:`.ttt`), shipped in the
package so ``yieldmcp demo`` runs from any install.

Does not own: any protocol work. It composes the other subpackages (server,
client, providers, elicit) and nothing imports it.
"""

from .commands import main as main

__all__ = ["main"]
