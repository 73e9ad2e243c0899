"""The WSGI application ``manage.py serve`` runs: Django, plus the MCP tools at ``/mcp``.

``/mcp`` is the SDK's Streamable HTTP transport (stateless, JSON responses) behind an
ASGI-to-WSGI adapter; see ``server.mcp.http``. Everything else is Django.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

django_application = get_wsgi_application()

from server.mcp.http import with_mcp  # noqa: E402  (needs Django set up)

application = with_mcp(django_application)
