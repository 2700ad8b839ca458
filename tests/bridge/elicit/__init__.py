"""Tests of ``bridge/elicit``: how a host answers forms."""
