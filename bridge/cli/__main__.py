"""``python -m bridge.cli``: the ``yieldmcp`` command."""

import sys

from .commands import main

sys.exit(main())
