"""Tests of ``runtime/steps``: ``ctx.step`` in process."""
