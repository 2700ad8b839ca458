"""Reliability: the whole stack under load, faults, cancellation storms and
soak. These test how the pieces hold together under stress, not one module."""
