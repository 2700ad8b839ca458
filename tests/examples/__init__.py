"""The examples in ``examples/``, played as a user plays them: they use the
whole public API, so they stand apart from the mirror of the source."""
