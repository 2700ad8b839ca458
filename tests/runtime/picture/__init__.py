"""Tests of ``runtime/picture``: the picture of a call, in a real browser."""
