"""Tests of ``runtime/elicitation``: form schemas from pydantic models."""
