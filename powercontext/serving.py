"""Serving a WSGI application with waitress: the bind policy and a clean shutdown.

Kept free of Django so it can be tested with any WSGI callable; ``manage.py serve``
wires it to the project (migrations, settings, database connections).

Why not ``waitress.serve`` / ``server.run()``: on SIGINT they stop the event loop and only
then wait for the worker threads. A response that did not fit into the socket in one
``send`` is written by the event loop, so it is cut off; and the listening socket stays
open while the workers finish, so new clients hang in the backlog and are then reset.
``Server.run`` below instead closes the listening socket first, keeps the loop running
until in-flight requests have been answered (bounded by ``grace``), then stops.
"""

import ipaddress
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_THREADS = 4
DEFAULT_GRACE_SECONDS = 10.0

# How often the drain loop looks at the channels; the trigger wakes it sooner whenever a
# worker finishes writing.
_DRAIN_POLL_SECONDS = 0.05


class BindRefused(Exception):
    """The address may not be bound in this configuration."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: 127.0.0.0/8, ::1 or ``localhost``.

    Other host names are not loopback even if they resolve to it today: the check is on
    what the operator wrote, not on the resolver's current answer. The wildcards
    (``0.0.0.0``, ``::``, ``*``, empty) are not loopback.
    """
    host = host.strip()
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:127.0.0.1 (Python < 3.13 does not see it as loopback by itself).
        address = address.ipv4_mapped
    return address.is_loopback


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
        application: Callable,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        threads: int = DEFAULT_THREADS,
        **adjustments: object,
    ) -> None:
        _quiet_waitress_logger()
        self.host = host.removeprefix("[").removesuffix("]")
        self._map: dict = {}
        self._waitress = create_server(
            application,
            map=self._map,
            host=self.host,
            port=port,
            threads=threads,
            **adjustments,
        )
        self._listeners = [o for o in self._map.values() if isinstance(o, BaseWSGIServer)]
        # A name that resolves to several addresses gets one listener each; with port 0
        # each gets its own port, and the first one is reported.
        self.port = int(self._listeners[0].effective_port)
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_write.setblocking(False)
        _Wakeup(self._wake_read, map=self._map)
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
