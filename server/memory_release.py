"""Giving memory back to the system once large responses are sent, and once the server
rests after any work (glibc's malloc).

glibc keeps what a thread frees in that thread's arena for the thread's next
allocations, and gives an arena's pages back only from its top. A server whose worker
threads each rendered a few large pages (a list of entries: up to 1 MiB of JSON, several
copies of it on the way out) stayed at its peak: 159 MiB idle, 384-402 MiB after six
clients listed 400 entries of 8 KiB three times, and still there minutes later
(docs/RELIABILITY.md, "Memory at rest"). Two things bound that here:

- :func:`limit_arenas`: at most :data:`ARENAS` arenas (glibc's default is eight per
  core), set before the worker threads start, so the threads share the memory one of
  them freed instead of each keeping its own high-water mark;
- :class:`Releaser`: after a response of at least :data:`LARGE_RESPONSE_BYTES`, once no
  request is in flight (or every :data:`BUSY_SECONDS` while they keep coming),
  ``malloc_trim(0)`` gives every arena's free pages back (0-25 ms, on its own thread,
  outside the GIL: ctypes releases it); and after any request, once none has come for
  :data:`REST_SECONDS`, once. A prompt's model run frees some megabytes of buffers, and
  glibc keeps them: after it frees a large buffer it raises its threshold for giving
  memory straight back to that size (up to 32 MiB), so the next ones come from the arenas
  and stay. A served 1,000-entry scope after 60 prepares and 60 searches
  (``bench/versus_reference.py``'s workload) held 186-225 MiB, and 168-205 once trimmed:
  18-25 MiB of such buffers. Fixing the threshold instead (``M_MMAP_THRESHOLD`` at 1 or 4
  MiB) gave them back as well, but every large buffer of every later model run then came
  fresh from the kernel: prepare p95 68 -> 77-87 ms. Trimming at rest costs a request
  nothing.

Nothing is done where the C library has neither (macOS, Windows, musl): those
allocators give memory back on their own terms. ``MALLOC_ARENA_MAX`` in the environment
is left to glibc.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

ARENAS = 2
LARGE_RESPONSE_BYTES = 256 * 1024
# After large responses: wait this long once none is in flight, then trim; while
# requests keep coming, trim at most this often.
SETTLE_SECONDS = 0.05
BUSY_SECONDS = 0.25
# After any request: trim once none has come for this long (a burst of prompts keeps its
# memory until it is over).
REST_SECONDS = 1.0
_M_ARENA_MAX = -8  # glibc's malloc.h


def _libc() -> Any | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc has it, musl and others do not
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (unless ``MALLOC_ARENA_MAX`` already says how many);
    call before the threads that allocate start. Whether the cap was set."""
    libc = _libc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


class Releaser:
    """Calls ``malloc_trim(0)`` on its own thread after large responses: once no request
    is in flight, or every :data:`BUSY_SECONDS` while requests keep coming; and after any
    request once none has come for :data:`REST_SECONDS`. The WSGI
    wrapper (:func:`releasing`) tells it when a request starts and when its response was
    handed over. :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        *,
        settle: float = SETTLE_SECONDS,
        busy: float = BUSY_SECONDS,
        rest: float = REST_SECONDS,
    ) -> None:
        self._libc = _libc()
        self._settle, self._busy, self._rest = settle, busy, rest
        self._in_flight = 0
        self._pending = False  # a large response was sent since the last trim
        self._worked = False  # a request was answered since the last trim
        self._finished_at = 0.0
        self._trimmed_at = 0.0
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="memory-release", daemon=True)
        self.trims = 0

    @property
    def available(self) -> bool:
        return self._libc is not None

    def start(self) -> Releaser:
        if self.available:
            self._thread.start()
        return self

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join()

    def started(self) -> None:
        """A request has come in."""
        with self._wake:
            self._in_flight += 1

    def finished(self, size: int) -> None:
        """A request's response, ``size`` bytes, was handed to the server to send."""
        with self._wake:
            self._in_flight -= 1
            if size >= LARGE_RESPONSE_BYTES:
                self._pending = True
            self._worked = True
            self._finished_at = time.monotonic()
            self._wake.notify()

    def _due(self) -> float | None:
        """Seconds until a trim is due (0: now), None while none is pending."""
        if self._pending:
            if self._in_flight <= 0:
                return 0.0
            return max(self._trimmed_at + self._busy - time.monotonic(), 0.0)
        if self._worked and self._in_flight <= 0:
            return max(self._finished_at + self._rest - time.monotonic(), 0.0)
        return None

    def _run(self) -> None:
        libc = self._libc
        if libc is None:
            return
        while True:
            with self._wake:
                while not self._stopped and (due := self._due()) != 0.0:
                    self._wake.wait(due)
                if self._stopped:
                    return
                self._pending = self._worked = False
            # A moment for the server's own thread to send what it was handed: its
            # buffers are freed then, and given back with the rest.
            time.sleep(self._settle)
            libc.malloc_trim(0)
            self._trimmed_at = time.monotonic()
            self.trims += 1


class _CountedBody:
    """A WSGI response body that counts its bytes and tells the releaser when it is
    closed (waitress closes it once the body is handed to the connection)."""

    def __init__(self, body: Iterable[bytes], finished: Callable[[int], None]) -> None:
        self._body, self._finished, self._size = body, finished, 0
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._body:
            self._size += len(chunk)
            yield chunk

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close = getattr(self._body, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self._finished(self._size)


class _CountedSizedBody(_CountedBody):
    """A counted body of a known number of chunks: waitress sets ``Content-Length`` from
    a body of one chunk, so the length goes through."""

    def __len__(self) -> int:
        return len(self._body)  # type: ignore[arg-type]


def releasing(application: Callable[..., Any], releaser: Releaser) -> Callable[..., Any]:
    """``application`` (WSGI), telling ``releaser`` when each request starts and how
    large a body it sent."""
    if not releaser.available:
        return application

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        releaser.started()
        try:
            body = application(environ, start_response)
        except BaseException:
            releaser.finished(0)
            raise
        file_wrapper = environ.get("wsgi.file_wrapper")
        if isinstance(file_wrapper, type) and isinstance(body, file_wrapper):
            # A file the server sends from disk (static files): nothing large in memory,
            # and wrapping it would stop the server from recognising it.
            releaser.finished(0)
            return body
        counted = _CountedSizedBody if hasattr(body, "__len__") else _CountedBody
        return counted(body, releaser.finished)

    return wrapped
