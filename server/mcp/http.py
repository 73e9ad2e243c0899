"""Serving the MCP tools over Streamable HTTP at ``/mcp``, inside the WSGI server.

The production server is WSGI (waitress); the SDK's Streamable HTTP transport is ASGI
(Starlette). ``with_mcp`` puts both behind one WSGI callable: ``/mcp`` goes to the SDK's
app through a2wsgi's ASGI-to-WSGI adapter, everything else to Django.

Why this works without long-lived streams: the SDK runs in *stateless* mode with *JSON
responses*. Each POST is one JSON-RPC exchange answered with one JSON body, so a waitress
worker thread is busy only for the call itself, like any API request. There are no
sessions to keep (any worker, any process can answer) and no SSE stream.

The ASGI side runs on one event loop in a daemon thread, started on the first ``/mcp``
request. The SDK's session manager needs its lifespan entered before it serves, which an
ASGI server would do and a2wsgi does not; ``_AsgiLoop`` drives the lifespan itself.

Checked here, before the SDK sees the request, with the API's own error shape:
- Host and Origin, first, by the rule every route follows (``server.origin_policy``),
  so a web page cannot reach the tools through DNS rebinding;
- the bearer token, exactly as for ``/v1/`` (when ``POWERCONTEXT_API_TOKEN`` is set): the
  agent token or a personal token; each tool then checks the caller's role;
- the body size limit (413 ``payload_too_large``);
- the method: POST only (405 otherwise; there is no stream to GET, no session to DELETE).
Every response carries ``X-PowerContext-Request-ID`` and gets one access-log line (method,
route, status, latency), like the API's.
"""

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

from powercontext import metrics
from powercontext.api.errors import error_body
from server import origin_policy
from server.middleware import REQUEST_ID_HEADER, request_id_for

MCP_PATH = "/mcp"
# Where an error answered here leaves its code for the metrics (WSGI lets a middleware
# add its own dotted keys to the environ).
_ERROR_CODE_KEY = "powercontext.error_code"
_STARTUP_TIMEOUT_SECONDS = 30.0

access_log = logging.getLogger("powercontext.access")
logger = logging.getLogger("powercontext.server.mcp")

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]


def _error_response(
    environ: dict,
    start_response: Callable,
    status: str,
    code: str,
    message: str,
    extra: list[tuple[str, str]] = (),
) -> list[bytes]:
    """The API's error shape, its code left in ``environ`` for ``_logged``."""
    environ[_ERROR_CODE_KEY] = code
    body = error_body(code, message)
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(data))),
        *extra,
    ]
    start_response(status, headers)
    return [data]


def _token_ok(environ: dict) -> bool:
    """The agent token or a personal token, as for ``/v1/`` (``caller_for``); what each
    may call is the tools' check (each tool's view's ``role``)."""
    from django.db import connections
    from rest_framework.exceptions import AuthenticationFailed

    from powercontext.api.auth import caller_for

    header = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
    try:
        return caller_for(header) is not None
    except AuthenticationFailed:
        return False
    finally:
        # A personal token is looked up in the database, on this server thread, outside
        # Django's request cycle that would close the connection.
        connections.close_all()


class _AsgiLoop:
    """An event loop in a daemon thread, running an ASGI app's lifespan."""

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="powercontext-mcp", daemon=True
        )
        self._thread.start()
        self._shutdown: asyncio.Event | None = None
        self._lifespan: asyncio.Future | None = None
        asyncio.run_coroutine_threadsafe(self._start(app), self.loop).result(
            _STARTUP_TIMEOUT_SECONDS
        )

    async def _start(self, app: Any) -> None:
        started: asyncio.Future = self.loop.create_future()
        self._shutdown = asyncio.Event()
        sent_startup = False

        async def receive() -> dict:
            nonlocal sent_startup
            if not sent_startup:
                sent_startup = True
                return {"type": "lifespan.startup"}
            await self._shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict) -> None:
            if message["type"] == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif message["type"] == "lifespan.startup.failed" and not started.done():
                started.set_exception(RuntimeError(message.get("message", "startup failed")))

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        self._lifespan = asyncio.ensure_future(app(scope, receive, send))
        self._lifespan.add_done_callback(
            lambda task: (
                started.done()
                or started.set_exception(RuntimeError("lifespan ended before startup"))
            )
        )
        await started

    def close(self) -> None:
        """Run the lifespan's shutdown, then stop the loop."""

        async def stop() -> None:
            if self._shutdown is not None:
                self._shutdown.set()
            if self._lifespan is not None:
                await asyncio.wait([self._lifespan], timeout=5)

        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)


class McpApplication:
    """The WSGI side of ``/mcp``: checks, then the SDK's app through a2wsgi."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wsgi: WSGIApp | None = None
        self._loop: _AsgiLoop | None = None

    def _app(self) -> WSGIApp:
        with self._lock:
            if self._wsgi is None:
                from a2wsgi import ASGIMiddleware
                from mcp.server.transport_security import TransportSecuritySettings

                from server.mcp.server import build_server

                asgi = build_server().streamable_http_app(
                    streamable_http_path=MCP_PATH,
                    stateless_http=True,
                    json_response=True,
                    max_request_body_size=settings.POWERCONTEXT_MAX_BODY_BYTES,
                    # Host and Origin are checked above, by the rule every route follows.
                    transport_security=TransportSecuritySettings(
                        enable_dns_rebinding_protection=False
                    ),
                )
                self._loop = _AsgiLoop(asgi)
                self._wsgi = ASGIMiddleware(asgi, loop=self._loop.loop)
            return self._wsgi

    def close(self) -> None:
        with self._lock:
            if self._loop is not None:
                self._loop.close()
            self._loop = self._wsgi = None

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        refused = origin_policy.refusal(
            environ.get("HTTP_HOST"),
            environ.get("HTTP_ORIGIN"),
            settings.POWERCONTEXT_ALLOWED_HOSTS,
        )
        if refused is not None:
            return _error_response(
                environ, start_response, "403 Forbidden", "permission_denied", refused
            )
        if environ.get("REQUEST_METHOD") != "POST":
            # Stateless and JSON-only: no SSE stream to GET (the spec's answer is 405),
            # no session to DELETE. A GET stream would also hold a worker thread forever.
            return _error_response(
                environ,
                start_response,
                "405 Method Not Allowed",
                "method_not_allowed",
                "Only POST is served at /mcp.",
                [("Allow", "POST")],
            )
        expected = settings.POWERCONTEXT_API_TOKEN
        if expected is not None:
            if not _token_ok(environ):
                return _error_response(
                    environ,
                    start_response,
                    "401 Unauthorized",
                    "unauthorized",
                    "A valid bearer token is required.",
                    [("WWW-Authenticate", 'Bearer realm="powercontext"')],
                )
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.POWERCONTEXT_MAX_BODY_BYTES:
            return _error_response(
                environ,
                start_response,
                "413 Request Entity Too Large",
                "payload_too_large",
                "The request body is too large.",
            )
        return self._app()(environ, start_response)


def with_mcp(django_app: WSGIApp, mcp_app: McpApplication | None = None) -> WSGIApp:
    """One WSGI callable: ``/mcp`` to the MCP tools, anything else to ``django_app``."""
    mcp = mcp_app if mcp_app is not None else McpApplication()

    def application(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") != MCP_PATH:
            return django_app(environ, start_response)
        return _logged(mcp, environ, start_response)

    application.mcp = mcp  # type: ignore[attr-defined]
    return application


def _logged(app: WSGIApp, environ: dict, start_response: Callable) -> Iterable[bytes]:
    """Request id header and one access-log line, as the API's middleware does."""
    request_id = request_id_for(environ.get("HTTP_X_POWERCONTEXT_REQUEST_ID", ""))
    started = time.perf_counter()
    status_line = ["500"]

    def start(status: str, headers: list, exc_info: Any = None) -> Callable:
        status_line[0] = status.split(" ", 1)[0]
        headers = [(k, v) for k, v in headers if k.lower() != REQUEST_ID_HEADER.lower()]
        headers.append((REQUEST_ID_HEADER, request_id))
        return (
            start_response(status, headers, exc_info)
            if exc_info
            else start_response(status, headers)
        )

    try:
        yield from app(environ, start)
    finally:
        seconds = time.perf_counter() - started
        method = metrics.method_label(environ.get("REQUEST_METHOD", ""))
        access_log.info("%s %s %s %.1fms", method, MCP_PATH, status_line[0], seconds * 1000)
        # /mcp bypasses Django's middleware, so it reports to the metrics itself.
        metrics.observe_request(
            operation=MCP_PATH,
            method=method,
            status=int(status_line[0]) if status_line[0].isdigit() else 500,
            seconds=seconds,
            # The API-shaped errors answered above; the SDK's own are JSON-RPC errors.
            error_code=environ.get(_ERROR_CODE_KEY),
        )
