"""Typing: pyright on user code (``x = yield from effect`` inferred, a user's
own file outside the repository); they check the type checker's view of the
public API, not a module."""
