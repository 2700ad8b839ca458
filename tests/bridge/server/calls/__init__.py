"""Tests of ``bridge/server/calls``: what each driver of a call adds to the core."""
