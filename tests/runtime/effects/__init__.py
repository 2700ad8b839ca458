"""Tests of ``runtime/effects``: the effect values and their digests."""
