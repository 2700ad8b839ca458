"""Tests of ``bridge/client/oauth``: the OAuth client."""
