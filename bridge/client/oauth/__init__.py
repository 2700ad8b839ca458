"""The client's half of MCP authorization: OAuth 2.1 for protected servers.

Owns: how a client authorizes (:class:`OAuth`, in :mod:`.config`), the flow
of one connection (:mod:`.flow`: the token on every request, and on 401 or
403 ``insufficient_scope`` discovery, registration, consent and tokens, then
the request again), each step of it (:mod:`.discovery` of resource and
authorization server metadata, :mod:`.endpoints` for the URLs it will use at
all (``https``, or ``http`` on loopback), :mod:`.registration` by pre-registration,
client ID metadata document or dynamic registration, :mod:`.scopes` to ask
for, :mod:`.redirect` for PKCE, the user's consent and the ``state``/``iss``
checks, :mod:`.loopback` for the browser's redirect, :mod:`.tokens` for the
token endpoint), every request to an authorization server bounded in time
and size as a whole (:mod:`.bounded`), the documents read (:mod:`.wire`) and
where tokens are kept (:mod:`.store`: memory, or a 0600 file).

Does not own: sending MCP (``bridge.client.http`` sends every request through
:class:`OAuthSession`), the ``WWW-Authenticate`` grammar
(``bridge.transports.www_authenticate``), or anything of the server side.
"""

from .config import OAuth as OAuth
from .flow import OAuthSession as OAuthSession
from .redirect import BrowserRedirect as BrowserRedirect
from .redirect import HeadlessRedirect as HeadlessRedirect
from .redirect import Redirect as Redirect
from .store import ClientInfo as ClientInfo
from .store import FileTokenStore as FileTokenStore
from .store import MemoryTokenStore as MemoryTokenStore
from .store import Tokens as Tokens
from .store import TokenStore as TokenStore

__all__ = [
    "BrowserRedirect",
    "ClientInfo",
    "FileTokenStore",
    "HeadlessRedirect",
    "MemoryTokenStore",
    "OAuth",
    "OAuthSession",
    "Redirect",
    "TokenStore",
    "Tokens",
]
