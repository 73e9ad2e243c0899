from django.apps import AppConfig


class ServerConfig(AppConfig):
    """Installed so that ``serve`` and ``mcp_stdio`` are management commands."""

    name = "server"
    label = "powercontext_server"
    verbose_name = "PowerContext server"
