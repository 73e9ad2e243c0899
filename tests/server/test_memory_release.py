"""Giving memory back after large responses (``server.memory_release``) and the
DRF response that no longer waits for the cyclic collector. The served figures are
``tests/reliability/test_memory_at_rest.py``'s."""

import gc
import io
import json
import time

import pytest

from server import memory_release
from server.memory_release import LARGE_RESPONSE_BYTES, Releaser, releasing

glibc = pytest.mark.skipif(memory_release._libc() is None, reason="needs glibc's malloc_trim")


class _Trims:
    """A stand-in C library that counts the trims."""

    def __init__(self):
        self.count = 0

    def malloc_trim(self, pad):
        self.count += 1
        return 1


def _releaser(**kwargs):
    releaser = Releaser(settle=0.0, **kwargs)
    releaser._libc = _Trims()
    return releaser.start()


def _app(size):
    def app(environ, start_response):
        start_response("200 OK", [])
        return [b"x" * size]

    return app


def _serve(app, environ=None):
    body = app({"wsgi.input": io.BytesIO(), **(environ or {})}, lambda *args: None)
    data = b"".join(body)
    getattr(body, "close", lambda: None)()
    return data


def _wait(predicate, seconds=2.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_a_large_response_is_followed_by_a_trim_once_nothing_is_in_flight():
    releaser = _releaser()
    try:
        served = releasing(_app(LARGE_RESPONSE_BYTES), releaser)
        assert len(_serve(served)) == LARGE_RESPONSE_BYTES
        assert _wait(lambda: releaser._libc.count == 1)
        time.sleep(0.1)
        assert releaser._libc.count == 1  # once, not again and again
    finally:
        releaser.stop()


def test_small_responses_trim_nothing_while_they_keep_coming_then_once_at_rest():
    releaser = _releaser(rest=0.4)
    try:
        served = releasing(_app(1000), releaser)
        started = time.monotonic()
        for _ in range(10):
            _serve(served)
            time.sleep(0.02)
        # Ten requests 20 ms apart: never a rest of 0.4 s among them (unless the machine
        # stalled that long, which the loop's own time shows).
        if time.monotonic() - started < 0.4:
            assert releaser._libc.count == 0
        assert _wait(lambda: releaser._libc.count >= 1)
        trimmed = releaser._libc.count
        time.sleep(0.6)
        assert releaser._libc.count == trimmed  # once per rest, not again and again
        releaser.started()  # a slow request that has not finished: no rest, no trim
        _serve(served)
        time.sleep(0.6)
        assert releaser._libc.count == trimmed
        releaser.finished(0)
        assert _wait(lambda: releaser._libc.count == trimmed + 1)
    finally:
        releaser.stop()


def test_while_a_request_is_in_flight_the_trim_waits_at_most_the_busy_interval():
    releaser = _releaser(busy=0.3)
    try:
        releaser.started()  # a slow request that has not finished
        _serve(releasing(_app(LARGE_RESPONSE_BYTES), releaser))
        started = time.monotonic()
        assert _wait(lambda: releaser._libc.count == 1)
        assert time.monotonic() - started < 1.0
    finally:
        releaser.finished(0)
        releaser.stop()


def test_a_file_the_server_sends_from_disk_is_passed_through_unwrapped():
    class FileWrapper:
        def __init__(self, *args):
            pass

        def __iter__(self):
            return iter([b"static"])

    releaser = _releaser()
    try:
        wrapped = releasing(lambda environ, start: FileWrapper(), releaser)
        body = wrapped({"wsgi.file_wrapper": FileWrapper}, lambda *args: None)
        assert type(body) is FileWrapper
        assert releaser._in_flight == 0
    finally:
        releaser.stop()


def test_an_application_that_raises_is_not_counted_in_flight_for_ever():
    releaser = _releaser()

    def broken(environ, start_response):
        raise RuntimeError("boom")

    try:
        with pytest.raises(RuntimeError):
            releasing(broken, releaser)({}, lambda *args: None)
        assert releaser._in_flight == 0
    finally:
        releaser.stop()


def test_the_arena_cap_leaves_an_operators_choice_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert memory_release.limit_arenas() is False


@glibc
def test_the_real_trim_runs():
    releaser = Releaser(settle=0.0).start()
    try:
        releaser.started()
        releaser.finished(LARGE_RESPONSE_BYTES)
        assert _wait(lambda: releaser.trims == 1)
    finally:
        releaser.stop()


@pytest.mark.django_db
def test_a_served_page_is_freed_when_sent_not_at_the_next_collection(api):
    """DRF's response refers to itself through its renderer context, and the view holds
    it: the API's views drop both links, so the page goes by reference counting."""
    import weakref

    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    handler = WSGIHandler()
    body = json.dumps({"scope_id": "scope-a", "limit": 10}).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/v1/memory/entries/list",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "REMOTE_ADDR": "127.0.0.1",
    }
    # As Django's test client does: the test's transaction keeps its connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    gc.disable()
    try:
        response = handler(environ, lambda *args: None)
        assert response.status_code == 200
        b"".join(response)
        response.close()
        gone = weakref.ref(response)
        del response
        assert gone() is None
    finally:
        gc.enable()
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_a_body_of_known_length_keeps_it():
    """waitress sets Content-Length from a one-chunk body's length: wrapping keeps it."""
    releaser = _releaser()
    try:
        body = releasing(_app(10), releaser)({}, lambda *args: None)
        assert len(body) == 1
        body.close()

        def generated(environ, start_response):
            yield b"x"

        assert not hasattr(releasing(generated, releaser)({}, None), "__len__")
    finally:
        releaser.stop()
