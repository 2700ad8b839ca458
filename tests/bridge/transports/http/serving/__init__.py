"""Tests of ``bridge/transports/http/serving``: the HTTP/1.1 server."""
