"""Tests of ``runtime/wire``: strict validation of wire JSON."""
