"""Tests of ``bridge/stores``: every store backend, against real servers."""
