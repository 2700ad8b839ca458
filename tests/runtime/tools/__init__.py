"""Tests of ``runtime/tools``: defining tools."""
