"""Tools behind OAuth: who is calling, and a tool that needs a scope.

Serve it as a resource server that accepts tokens from your authorization
server (see docs/auth.md)::

    yieldmcp serve examples/protected.py --http 8000 --auth https://issuer.example

and call it; the first call opens your browser to authorize::

    yieldmcp call http://127.0.0.1:8000/mcp whoami

Without ``--auth`` the same tools run with no principal.
"""

from __future__ import annotations

from runtime import Context, tool


@tool
def whoami(ctx: Context) -> str:
    """Who the access token says is calling, and what it may do."""
    caller = ctx.principal
    if caller is None:
        return "nobody (this server checks no tokens)"
    return f"{caller.subject} via {caller.client_id} {sorted(caller.scopes)}"


@tool(scopes=["notes:write"])
def write_note(text: str, ctx: Context) -> str:
    """Write a note; the caller's token must grant notes:write."""
    author = ctx.principal.subject if ctx.principal else "nobody"
    return f"{author} wrote {text!r}"
