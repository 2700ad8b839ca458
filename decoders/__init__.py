"""decoders package."""
