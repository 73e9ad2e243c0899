"""Serving a WSGI application with waitress: the bind policy and a clean shutdown.

Kept free of Django so it can be tested with any WSGI callable; ``manage.py serve``
wires it to the project (migrations, settings, database connections).

Why not ``waitress.serve`` / ``server.run()``: on SIGINT they stop the event loop and only
then wait for the worker threads. A response that did not fit into the socket in one
``send`` is written by the event loop, so it is cut off; and the listening socket stays
open while the workers finish, so new clients hang in the backlog and are then reset.
``Server.run`` below instead closes the listening socket first, keeps the loop running
until in-flight requests have been answered (bounded by ``grace``), then stops.

Waitress's public API is ``create_server``/``serve`` and its adjustments; none of the
following has a public form, so each uses waitress internals (pinned: waitress==3.0.2 in
requirements.txt; tests/server/test_serve.py covers each):

- the drain above: the event loop (``wasyncore.loop``) run here rather than by
  ``server.run()``, the listeners closed alone, ``task_dispatcher.shutdown``;
- errors waitress answers itself in the API's JSON shape: ``HTTPChannel.error_task_class``
  (an ``ErrorTask`` subclass), set through the listeners' ``channel_class``;
- the request timeout (waitress has none): a sweep over the channels' partial requests,
  answering 408 into the channel's output buffer under its locks;
- a wake-up socket in the loop's map, so a signal or ``request_stop`` is seen at once.

Limits, set deliberately rather than left at waitress's defaults (docs/RELIABILITY.md,
"Slow clients and connection limits"): waitress holds at most ``connection_limit``
connections and stops accepting beyond that, so a client that opens many connections and
trickles a byte now and then could hold every slot. ``idle_timeout`` closes a
connection that sends nothing; ``request_timeout`` closes one whose request has not
arrived in full in that time, however steadily it trickles (waitress has no such
limit). Errors that waitress answers itself (a malformed request, headers or a body over
its limits) get the API's JSON error shape.
"""

import json
import logging
import resource
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from wsgiref.types import WSGIApplication

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server
from waitress.task import ErrorTask

from server.addresses import is_loopback

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_THREADS = 4
DEFAULT_GRACE_SECONDS = 10.0
# Waitress's default is 100, which a hundred trickling sockets fill. A connection that is
# only being read costs a few kilobytes and no worker thread, so holding many is cheap.
DEFAULT_CONNECTION_LIMIT = 1000
# A connection with no request in progress (a finished keep-alive, or nothing sent yet)
# is closed after this long. Waitress's default is 120 s.
DEFAULT_IDLE_TIMEOUT_SECONDS = 30
# The whole request (headers and body) must arrive within this long of its first byte.
# The largest body the server takes (16 MiB) needs about 13 Mbit/s to make it.
DEFAULT_REQUEST_TIMEOUT_SECONDS = 10.0
# File descriptors beside the connections: listeners, the trigger, the database, logs.
_SPARE_FILE_DESCRIPTORS = 64

# How often the drain loop looks at the channels; the trigger wakes it sooner whenever a
# worker finishes writing.
_DRAIN_POLL_SECONDS = 0.05


class BindRefused(Exception):
    """The address may not be bound in this configuration."""


def check_bind_allowed(host: str, *, token_configured: bool) -> None:
    """Raise ``BindRefused`` unless ``host`` is loopback or an API token is configured.

    Without a token every caller that can connect is trusted, so only this machine may.
    """
    if token_configured or is_loopback(host):
        return
    raise BindRefused(
        f"Refusing to listen on {host!r} without an API token: anyone who can reach it "
        "could read and write every memory. Set POWERCONTEXT_API_TOKEN (agents then send "
        "'Authorization: Bearer <token>'), or listen on a loopback address such as "
        "127.0.0.1."
    )


def format_url(host: str, port: int) -> str:
    """``http://host:port/``, with an IPv6 literal in brackets."""
    host = host.removeprefix("[").removesuffix("]")
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


class _RedactRequestDetails(logging.Filter):
    """Keep request paths out of waitress's log lines.

    The application's middleware writes the access log; waitress would otherwise name
    the path when a client disconnects or the application raises past Django.
    """

    _PREFIXES = ("Client disconnected while serving ", "Exception while serving ")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            for prefix in self._PREFIXES:
                if record.msg.startswith(prefix):
                    record.msg = prefix + "a request"
                    record.args = ()
        return True


def _quiet_waitress_logger() -> None:
    waitress_logger = logging.getLogger("waitress")
    if not any(isinstance(f, _RedactRequestDetails) for f in waitress_logger.filters):
        waitress_logger.addFilter(_RedactRequestDetails())


# The API's error shape (powercontext/api/errors.py, DESIGN.md), written out here
# because this module does not import Django. The message is fixed per status: waitress's
# own detail can quote the request line or a header.
_WAITRESS_ERRORS = {
    400: ("bad_request", "The request is not valid HTTP."),
    408: ("request_timeout", "The request was not received in time."),
    413: ("payload_too_large", "The request body is too large."),
    431: ("headers_too_large", "The request headers are too large."),
    500: ("internal_error", "Internal error."),
    501: ("not_implemented", "The request uses an HTTP feature this server does not support."),
}
_REQUEST_ID_HEADER = "X-PowerContext-Request-ID"


def error_response(status: int) -> tuple[list[tuple[str, str]], bytes]:
    """Headers and JSON body for an error that waitress answers before the application."""
    code, message = _WAITRESS_ERRORS.get(status, _WAITRESS_ERRORS[400 if status < 500 else 500])
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    headers = [
        ("Content-Type", "application/json"),
        (_REQUEST_ID_HEADER, uuid.uuid4().hex),
    ]
    return headers, body


class _JsonErrorTask(ErrorTask):
    """Waitress's error response (400, 413, 431, 500, 501) in the API's JSON shape."""

    def execute(self) -> None:
        error = self.request.error
        headers, body = error_response(error.code)
        self.status = f"{error.code} {error.reason}"
        self.response_headers.extend(headers)
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Channel(HTTPChannel):
    error_task_class = _JsonErrorTask
    request: Any  # waitress's HTTPRequestParser being received, or None

    def refuse_slow_request(self) -> None:
        """Answer 408 and close: the request took longer than allowed to arrive.

        Called on the event loop's thread. Under the requests lock (as waitress's own
        ``received``) and only while no task runs on this channel, so no response is
        being written: the 408 goes into the output buffer as waitress writes
        ``100 Continue``.
        """
        with self.requests_lock:
            request = self.request
            if request is None or self.requests or self.will_close:
                return
            headers, body = error_response(408)
            head = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
            head += "".join(f"{name}: {value}\r\n" for name, value in headers)
            head += f"Content-Length: {len(body)}\r\n\r\n"
            payload = head.encode("latin-1") + body
            with self.outbuf_lock:
                self.outbufs[-1].append(payload)
                self.current_outbuf_count += len(payload)
                self.total_outbufs_len += len(payload)
            self.request = None
            request.close()  # a body already spooled to a temporary file
            self.close_when_flushed = True


class _SlowRequestSweeper:
    """Closes connections whose request has been arriving for longer than ``timeout``.

    Looked at about once a second from the event loop, so a request's start is known to
    within that: the first sweep that sees a partly received request notes the time.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._started: dict[HTTPChannel, tuple[object, float]] = {}
        self._next_sweep = 0.0

    def sweep(self, channel_map: dict[int, Any]) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + min(1.0, self.timeout / 2)
        started: dict[HTTPChannel, tuple[object, float]] = {}
        for channel in channel_map.values():
            if not isinstance(channel, _Channel):
                continue
            request = channel.request
            if request is None or channel.requests or channel.will_close:
                continue  # nothing arriving, or a response is being made
            seen_request, since = self._started.get(channel, (None, now))
            if seen_request is not request:
                since = now
            if now - since >= self.timeout and not channel.close_when_flushed:
                channel.refuse_slow_request()
                continue
            started[channel] = (request, since)
        self._started = started


def _ensure_file_descriptors(connection_limit: int) -> int:
    """Raise the soft limit on open files so ``connection_limit`` connections fit, as far
    as the hard limit allows; returns the connection limit that fits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connection_limit + _SPARE_FILE_DESCRIPTORS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new_soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
            soft = new_soft
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < wanted:
        fitting = max(soft - _SPARE_FILE_DESCRIPTORS, 1)
        logging.getLogger("powercontext.server.serving").warning(
            "Open-file limit %d allows only %d connections (asked for %d).",
            soft,
            fitting,
            connection_limit,
        )
        return fitting
    return connection_limit


class _Wakeup(wasyncore.dispatcher):
    """The read end of a socket pair in the event loop, so a stop request wakes it."""

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def handle_read(self) -> None:
        try:
            self.recv(4096)
        except OSError:
            pass


class Server:
    """A bound waitress server that runs until SIGTERM/SIGINT, then drains and stops.

    Construction binds the socket (so ``port`` is the real one even for port 0); ``run``
    serves. The first SIGTERM or SIGINT stops accepting connections and lets requests
    in flight finish for up to ``grace`` seconds; a second one stops at once.
    """

    def __init__(
        self,
        application: WSGIApplication,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        threads: int = DEFAULT_THREADS,
        connection_limit: int = DEFAULT_CONNECTION_LIMIT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
        **adjustments: object,
    ) -> None:
        _quiet_waitress_logger()
        self.host = host.removeprefix("[").removesuffix("]")
        self._map: dict[int, Any] = {}
        self.connection_limit = _ensure_file_descriptors(connection_limit)
        self._waitress = create_server(
            application,
            map=self._map,
            host=self.host,
            port=port,
            threads=threads,
            # Whole seconds (waitress takes an int); checked every second.
            channel_timeout=max(int(idle_timeout), 1),
            cleanup_interval=1,
            # select() cannot watch a descriptor numbered 1024 or more.
            asyncore_use_poll=True,
            **adjustments,
        )
        self._listeners = [o for o in self._map.values() if isinstance(o, BaseWSGIServer)]
        for listener in self._listeners:
            listener.channel_class = _Channel
        self._sweeper = _SlowRequestSweeper(request_timeout)
        # A name that resolves to several addresses gets one listener each; with port 0
        # each gets its own port, and the first one is reported.
        self.port = int(self._listeners[0].effective_port)
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_write.setblocking(False)
        _Wakeup(self._wake_read, map=self._map)
        # Waitress counts every socket in its map against the limit, not only clients:
        # its listeners, its trigger and the wake-up above.
        self._waitress.adj.connection_limit = self.connection_limit + len(self._map)
        self._stop_requested = threading.Event()
        self._stop_now = threading.Event()

    @property
    def url(self) -> str:
        return format_url(self.host, self.port)

    def request_stop(self, *, immediately: bool = False) -> None:
        """Ask ``run`` to drain and return; safe from any thread."""
        if immediately or self._stop_requested.is_set():
            self._stop_now.set()
        self._stop_requested.set()
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"\0")
        except OSError:
            pass  # buffer full (the loop is already due to wake) or already closed

    def _on_signal(self, signum: int, frame: object) -> None:
        self.request_stop()

    def run(
        self,
        *,
        grace: float = DEFAULT_GRACE_SECONDS,
        ready: Callable[[], None] | None = None,
    ) -> None:
        """Serve until stopped, then drain for up to ``grace`` seconds and close everything.

        ``ready`` is called once the signal handlers are in place, so a caller that
        signals the process as soon as it sees "ready" gets a clean shutdown.
        """
        restore = self._install_signal_handlers()
        try:
            if ready is not None:
                ready()
            adj = self._waitress.adj
            while not self._stop_requested.is_set():
                wasyncore.loop(
                    timeout=adj.asyncore_loop_timeout,
                    map=self._map,
                    use_poll=adj.asyncore_use_poll,
                    count=1,
                )
                self._sweeper.sweep(self._map)
            self._drain(deadline=time.monotonic() + grace)
        finally:
            restore()
            self._close()

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None  # only the main thread may; request_stop() still works
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _STOP_SIGNALS}
        # A signal delivered while the loop sleeps in poll() on another thread's behalf
        # would otherwise only be seen at the next timeout.
        previous_wakeup_fd = signal.set_wakeup_fd(
            self._wake_write.fileno(), warn_on_full_buffer=False
        )

        def restore() -> None:
            signal.set_wakeup_fd(previous_wakeup_fd)
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore

    def _drain(self, *, deadline: float) -> None:
        # Close only the listening sockets: new connections are refused at once, while
        # the trigger (a worker's way to wake the loop) stays open for in-flight tasks.
        # BaseWSGIServer.close() would close the trigger as well.
        for listener in self._listeners:
            listener.accepting = False
            wasyncore.dispatcher.close(listener)
        while time.monotonic() < deadline and not self._stop_now.is_set():
            busy = False
            for channel in [o for o in self._map.values() if isinstance(o, HTTPChannel)]:
                if channel.requests or channel.total_outbufs_len:
                    busy = True
                else:
                    # Idle keep-alive connection, or a request still being received:
                    # close it; the loop does so on its next pass.
                    channel.will_close = True
            if not busy:
                break
            wasyncore.loop(
                timeout=_DRAIN_POLL_SECONDS,
                map=self._map,
                use_poll=self._waitress.adj.asyncore_use_poll,
                count=1,
            )
        # Workers exit once their current task is done; tasks still queued are cancelled.
        remaining = 0.0 if self._stop_now.is_set() else deadline - time.monotonic()
        self._waitress.task_dispatcher.shutdown(cancel_pending=True, timeout=max(remaining, 0.1))

    def _close(self) -> None:
        wasyncore.close_all(self._map, ignore_all=True)
        self._wake_write.close()


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
