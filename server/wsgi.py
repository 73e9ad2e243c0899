"""The WSGI application ``manage.py serve`` runs: Django, the MCP tools at ``/mcp``
included (a view: see ``server.mcp.http``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

application = get_wsgi_application()
