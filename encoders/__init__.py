"""encoders package."""
