"""Tests of ``bridge/cli``: the ``yieldmcp`` command line."""
