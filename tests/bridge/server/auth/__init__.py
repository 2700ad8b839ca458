"""Tests of ``bridge/server/auth``: the server as an OAuth resource server."""
