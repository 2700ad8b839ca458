"""Tests of ``bridge/providers``: model providers over HTTP and the offline model."""
