"""HAProxy on loopback in front of yieldmcp processes: round robin, no stickiness.

HAProxy is the Debian package (``.ci/run`` installs it); :data:`HAPROXY` is
its binary, None when it is missing. :data:`CONFIG` sends each request to the
next of two backends, and retries a connection a dead backend refused on the
other one (``option redispatch``).
"""

from __future__ import annotations

import os
import shutil

HAPROXY = shutil.which(
    "haproxy", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
)
CONFIG = """\
global
    maxconn 256
defaults
    mode http
    retries 3
    option redispatch 1
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend mcp
    bind 127.0.0.1:{port}
    default_backend workers
backend workers
    balance roundrobin
    server one 127.0.0.1:{one}
    server two 127.0.0.1:{two}
"""
