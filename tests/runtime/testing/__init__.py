"""Tests of ``runtime/testing``: the testing kit."""
