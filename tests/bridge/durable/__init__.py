"""Tests of ``bridge/durable``: what the server keeps in a store, in one process."""
