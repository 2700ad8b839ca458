"""Tests of ``bridge/transports/http``: the Streamable HTTP endpoint."""
