"""Tests of ``bridge/host``: the in-process host."""
