"""``manage.py mcp_stdio``: the MCP tools over stdio, for an agent to launch.

The agent starts it with ``cwd`` = this repository (or ``python /path/to/manage.py``) and
the same ``POWERCONTEXT_HOME`` / ``POWERCONTEXT_DATABASE_URL`` as the server, so both see
one database. stdout carries the protocol and nothing else: migration output and logs go
to stderr.
"""

import anyio
from django.core.management.base import BaseCommand
from django.db import connections

from powercontext import startup
from server.mcp.server import build_server


class Command(BaseCommand):
    help = (
        "Serve PowerContext's MCP tools (search and maintain Memory, get and propose "
        "Experience) over stdin/stdout until stdin closes. Applies pending migrations first."
    )

    def handle(self, *args: object, verbosity: int, **options: object) -> None:
        try:
            # Never self.stdout: it is the MCP channel.
            startup.prepare_database(verbosity=verbosity, stdout=self.stderr, stderr=self.stderr)
            connections.close_all()
            anyio.run(build_server().run_stdio_async)
        finally:
            connections.close_all()
