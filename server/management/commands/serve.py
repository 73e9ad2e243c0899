"""``manage.py serve``: migrate, then serve PowerContext with waitress."""

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.servers.basehttp import get_internal_wsgi_application
from django.db import connections

from powercontext import startup
from powercontext.server_records import (
    ServerRecord,
    running_servers,
    server_record_remove,
    server_record_write,
)
from server import origin_policy
from server import seekdb as seekdb_engine
from server.background import Background
from server.config import database_config, protect_sqlite_files
from server.serving import (
    DEFAULT_CONNECTION_LIMIT,
    DEFAULT_GRACE_SECONDS,
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_PORT,
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    DEFAULT_THREADS,
    BindRefused,
    Server,
    check_bind_allowed,
)


class Command(BaseCommand):
    help = (
        "Apply pending migrations, then serve PowerContext (API, admin and its static "
        "files) with waitress until SIGTERM or SIGINT. Listens on loopback unless "
        "POWERCONTEXT_API_TOKEN is set."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host",
            default=DEFAULT_HOST,
            help=f"Address to listen on (default {DEFAULT_HOST}). Anything but loopback "
            "needs POWERCONTEXT_API_TOKEN.",
        )
        parser.add_argument(
            "--port",
            type=int,
            default=DEFAULT_PORT,
            help=f"Port to listen on (default {DEFAULT_PORT}; 0 picks a free one).",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=DEFAULT_THREADS,
            help=f"Worker threads (default {DEFAULT_THREADS}).",
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=DEFAULT_GRACE_SECONDS,
            help="Seconds requests in flight may take to finish after SIGTERM/SIGINT "
            f"(default {DEFAULT_GRACE_SECONDS:g}).",
        )
        parser.add_argument(
            "--connection-limit",
            type=int,
            default=DEFAULT_CONNECTION_LIMIT,
            help="Client connections held at once; more wait to be accepted "
            f"(default {DEFAULT_CONNECTION_LIMIT}).",
        )
        parser.add_argument(
            "--idle-timeout",
            type=int,
            default=DEFAULT_IDLE_TIMEOUT_SECONDS,
            help="Seconds a connection may stay open without a request in progress "
            f"(default {DEFAULT_IDLE_TIMEOUT_SECONDS}).",
        )
        parser.add_argument(
            "--request-timeout",
            type=float,
            default=DEFAULT_REQUEST_TIMEOUT_SECONDS,
            help="Seconds a request (headers and body) may take to arrive; a slower one "
            f"gets 408 and is closed (default {DEFAULT_REQUEST_TIMEOUT_SECONDS:g}).",
        )
        parser.add_argument(
            "--engine",
            choices=("seekdb",),
            help="seekdb: start OceanBase's embedded kernel (pip install -r "
            "requirements-oceanbase.txt) with its data in the data directory, create the "
            "database and serve on it (default: POWERCONTEXT_DATABASE_URL, else SQLite).",
        )
        parser.add_argument(
            "--no-vector-catch-up",
            action="store_true",
            help="Do not embed, in the background, the entries whose vectors are missing "
            "or stale (after an upgrade, a model change, or writes made with the semantic "
            "channel off); manage.py rebuild_index does it instead.",
        )

    def handle(self, *args: object, **options: Any) -> None:
        _check(options)
        # First: a second seekdb on the same data directory fails to start, and this says why.
        _warn_of_other_servers(self)
        engine = options.get("engine")
        seekdb = _start_seekdb(self, options["verbosity"]) if engine == "seekdb" else None
        try:
            connection = connections["default"]
            if connection.vendor == "sqlite":
                protect_sqlite_files(str(connection.settings_dict["NAME"]), create=True)
            with Background() as background:
                startup.prepare_database(
                    verbosity=options["verbosity"], stdout=self.stdout, stderr=self.stderr
                )
                background.start(vector_catch_up=not options["no_vector_catch_up"])
                server = _server(background.wrap(get_internal_wsgi_application()), options)
                recorded: ServerRecord | None = None

                def ready() -> None:
                    nonlocal recorded
                    # Listening already: a request sent now waits in the backlog.
                    background.wait_for_model()
                    recorded = server_record_write(
                        home=Path(settings.POWERCONTEXT_HOME), url=server.url
                    )
                    self.stdout.write(f"PowerContext serving on {server.url} (data: {_data()})")
                    self.stdout.flush()

                try:
                    server.run(grace=options["grace"], ready=ready)
                finally:
                    if recorded is not None:
                        server_record_remove(recorded)
        finally:
            connections.close_all()
            if seekdb is not None:
                seekdb.stop()
        if options["verbosity"] >= 1:
            self.stdout.write("PowerContext stopped.")


def _check(options: dict[str, Any]) -> None:
    """CommandError for options out of range or a bind this configuration refuses, before
    anything touches the database: a refused start changes nothing."""
    if not 0 <= options["port"] <= 65535:
        raise CommandError("--port must be between 0 and 65535.")
    if options["threads"] < 1:
        raise CommandError("--threads must be at least 1.")
    if options["grace"] < 0:
        raise CommandError("--grace must not be negative.")
    if options["connection_limit"] < 1:
        raise CommandError("--connection-limit must be at least 1.")
    if options["idle_timeout"] < 1 or options["request_timeout"] <= 0:
        raise CommandError("--idle-timeout and --request-timeout must be positive.")
    host = options["host"]
    try:
        check_bind_allowed(host, token_configured=bool(settings.POWERCONTEXT_API_TOKEN))
    except BindRefused as refused:
        raise CommandError(str(refused)) from None
    if os.environ.get("POWERCONTEXT_ALLOWED_HOSTS") and not settings.POWERCONTEXT_API_TOKEN:
        raise CommandError(
            "POWERCONTEXT_ALLOWED_HOSTS is set but POWERCONTEXT_API_TOKEN is not: "
            "without a token only this machine's names are served. Set the token, or "
            "unset POWERCONTEXT_ALLOWED_HOSTS."
        )
    origin_policy.allow_bound_host(host)


def _server(application: Callable[..., Any], options: dict[str, Any]) -> Server:
    """The bound waitress server for ``options``; CommandError when it cannot listen."""
    try:
        return Server(
            application,
            host=options["host"],
            port=options["port"],
            threads=options["threads"],
            connection_limit=options["connection_limit"],
            idle_timeout=options["idle_timeout"],
            request_timeout=options["request_timeout"],
            # Bodies the application would refuse anyway (413 in the API's own error
            # shape) need not be buffered to disk; far larger ones get waitress's plain
            # 413 before they are read.
            max_request_body_size=4 * settings.POWERCONTEXT_MAX_BODY_BYTES,
        )
    except (OSError, ValueError) as error:
        raise CommandError(
            f"Cannot listen on {options['host']}:{options['port']}: {error}"
        ) from error


def _warn_of_other_servers(command: BaseCommand) -> None:
    """Say so when another server runs on this data directory: it works (SQLite queues
    the writers), but a second server is rarely what the user meant."""
    home = Path(settings.POWERCONTEXT_HOME)
    for other in running_servers(home=home, forget_stale=True):
        command.stderr.write(
            f"Warning: another PowerContext server (pid {other.pid}, {other.url}) already "
            f"serves this data directory ({home}); both will read and write the same data."
        )


def _start_seekdb(command: BaseCommand, verbosity: int) -> seekdb_engine.Seekdb:
    """``--engine seekdb``: start seekdb in the data directory and make its database the
    default connection, before anything has connected to the configured one."""
    if os.environ.get("POWERCONTEXT_DATABASE_URL"):
        raise CommandError(
            "--engine seekdb serves on its own database: unset POWERCONTEXT_DATABASE_URL "
            "(or drop --engine to serve on that URL)."
        )
    home = Path(settings.POWERCONTEXT_HOME)
    if verbosity >= 1:
        command.stdout.write(f"Starting seekdb in {home / seekdb_engine.DIRECTORY} ...")
        command.stdout.flush()
    try:
        seekdb = seekdb_engine.start(home)
    except (seekdb_engine.SeekdbUnavailable, OSError) as error:
        raise CommandError(str(error)) from None
    except Exception as error:
        message = f"seekdb started but its database could not be created: {error}"
        raise CommandError(message) from None
    connections.close_all()
    settings.DATABASES["default"] = database_config(home, url=seekdb.url)
    # Django's handler keeps the configured dictionaries (defaults filled in) and one
    # connection per thread: both are made again from the new settings.
    connections._settings = connections.configure_settings(None)  # type: ignore[attr-defined]
    connections.__dict__.pop("settings", None)
    with contextlib.suppress(AttributeError):
        del connections["default"]
    return seekdb


def _data() -> str:
    """Where the data lives, for the ready line: never a URL (it may carry a password)."""
    connection = connections["default"]
    if connection.vendor != "sqlite":
        # display_name, not vendor: OceanBase's vendor is "mysql" (Django's MySQL code
        # runs on it), and PowerContext refuses to start on MySQL itself.
        return f"{connection.display_name} database {connection.settings_dict['NAME']}"
    home = Path(settings.POWERCONTEXT_HOME)
    name = Path(str(connection.settings_dict["NAME"]))
    return str(home if name.is_relative_to(home) else name)
