"""Serving the MCP tools over Streamable HTTP at ``/mcp``, as a Django view.

The production server is WSGI (waitress); the SDK's Streamable HTTP transport is ASGI
(Starlette). ``mcp_view`` hands the request to the SDK's app through a2wsgi's
ASGI-to-WSGI adapter and answers with what it gave.

Why this works without long-lived streams: the SDK runs in *stateless* mode with *JSON
responses*. Each POST is one JSON-RPC exchange answered with one JSON body, so a waitress
worker thread is busy only for the call itself, like any API request. There are no
sessions to keep (any worker, any process can answer) and no SSE stream.

The ASGI side runs on one event loop in a daemon thread, started on the first ``/mcp``
request. The SDK's session manager needs its lifespan entered before it serves, which an
ASGI server would do and a2wsgi does not; ``_AsgiLoop`` drives the lifespan itself.

Being a Django view, ``/mcp`` goes through the same edge as ``/v1/`` (``server.middleware``):
Host and Origin by the rule every route follows (so a web page cannot reach the tools
through DNS rebinding), the body size limit (413), the request id, the access-log line
and the metrics. Checked here besides, in the API's error shape: the method, POST only
(405: there is no stream to GET, no session to DELETE), then the bearer token exactly as
for ``/v1/`` (when ``POWERCONTEXT_API_TOKEN`` is set): the agent token or a personal token;
each tool then checks the caller's role.
"""

import asyncio
import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from powercontext.api.errors import json_error

MCP_PATH = "/mcp"
_STARTUP_TIMEOUT_SECONDS = 30.0

# A WSGI application: (environ, start_response) -> body.
WSGIApp = Callable[..., Iterable[bytes]]


def _token_ok(request: HttpRequest) -> bool:
    """The agent token or a personal token, as for ``/v1/`` (``caller_for``); what each
    may call is the tools' check (each tool's view's ``role``)."""
    from rest_framework.exceptions import AuthenticationFailed

    from powercontext.api.auth import caller_for

    header = request.META.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
    try:
        return caller_for(header) is not None
    except AuthenticationFailed:
        return False


class _AsgiLoop:
    """An event loop in a daemon thread, running an ASGI app's lifespan."""

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="powercontext-mcp", daemon=True
        )
        self._thread.start()
        self._shutdown: asyncio.Event | None = None
        self._lifespan: asyncio.Future[None] | None = None
        asyncio.run_coroutine_threadsafe(self._start(app), self.loop).result(
            _STARTUP_TIMEOUT_SECONDS
        )

    async def _start(self, app: Any) -> None:
        started: asyncio.Future[None] = self.loop.create_future()
        shutdown = self._shutdown = asyncio.Event()
        sent_startup = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_startup
            if not sent_startup:
                sent_startup = True
                return {"type": "lifespan.startup"}
            await shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif message["type"] == "lifespan.startup.failed" and not started.done():
                started.set_exception(RuntimeError(message.get("message", "startup failed")))

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        self._lifespan = asyncio.ensure_future(app(scope, receive, send))

        def ended(task: asyncio.Future[None]) -> None:
            if not started.done():
                started.set_exception(RuntimeError("lifespan ended before startup"))

        self._lifespan.add_done_callback(ended)
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
                self._wsgi = ASGIMiddleware(asgi, loop=self._loop.loop)  # type: ignore[arg-type]
            return self._wsgi

    def close(self) -> None:
        with self._lock:
            if self._loop is not None:
                self._loop.close()
            self._loop = self._wsgi = None

    def respond(self, request: WSGIRequest) -> HttpResponse:
        """The SDK's answer to ``request`` (the edge's checks already passed), or the API's
        error for another method than POST or a missing or wrong token."""
        if request.method != "POST":
            # Stateless and JSON-only: no SSE stream to GET (the spec's answer is 405),
            # no session to DELETE. A GET stream would also hold a worker thread forever.
            refused = json_error(405, "method_not_allowed", "Only POST is served at /mcp.")
            refused["Allow"] = "POST"
            return refused
        if settings.POWERCONTEXT_API_TOKEN is not None and not _token_ok(request):
            refused = json_error(401, "unauthorized", "A valid bearer token is required.")
            refused["WWW-Authenticate"] = 'Bearer realm="powercontext"'
            return refused
        # The request itself as the body's stream: it reads at most Content-Length bytes.
        environ = {**request.environ, "wsgi.input": request}
        answered: list[tuple[str, list[tuple[str, str]]]] = []
        chunks: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            answered[:] = [(status, headers)]
            return chunks.append

        body = self._app()(environ, start_response)
        try:
            chunks.extend(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        status, headers = answered[0]
        response = HttpResponse(b"".join(chunks), status=int(status.split(" ", 1)[0]))
        for name, value in headers:
            if name.lower() != "content-length":  # Django sets its own
                response[name] = value
        return response


_MCP = McpApplication()


@csrf_exempt  # a JSON API authenticated by its bearer token, as /v1/ is
def mcp_view(request: WSGIRequest) -> HttpResponse:
    """``/mcp``: the MCP tools over Streamable HTTP (stateless, JSON responses)."""
    return _MCP.respond(request)
