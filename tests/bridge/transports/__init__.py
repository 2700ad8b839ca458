"""Tests of ``bridge/transports``: how bytes move."""
