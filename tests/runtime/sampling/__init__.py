"""Tests of ``runtime/sampling``: reading a model's reply."""
