"""Tests of ``runtime/call``: the call's machine, the stepper, the trio driver."""
