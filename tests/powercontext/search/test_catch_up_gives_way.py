"""The vector catch-up gives way to requests: it starts no batch while one is answered
(``catch_up.serving``, wrapped around every request by ``serve``), a small batch at a
time, yet always goes on (``MOST_PAUSE_SECONDS``) and stops at once when asked."""

import threading
import time

from powercontext.search import catch_up


def _waited(**options) -> float:
    started = time.monotonic()
    catch_up.wait_for_quiet(**options)
    return time.monotonic() - started


def test_no_batch_starts_while_a_request_is_answered():
    ended = threading.Event()

    def request() -> None:
        with catch_up.serving():
            time.sleep(0.4)
        ended.set()

    with catch_up.serving():
        thread = threading.Thread(target=request)
        thread.start()
        time.sleep(0.05)
    waited = _waited(quiet=0.05, most=10)
    thread.join()
    assert ended.is_set()
    assert 0.3 <= waited < 5


def test_a_batch_goes_ahead_after_the_longest_pause_under_unbroken_traffic():
    with catch_up.serving():
        assert 0.2 <= _waited(quiet=0.05, most=0.2) < 2


def test_stop_ends_the_wait_at_once():
    stop = threading.Event()
    stop.set()
    with catch_up.serving():
        assert _waited(stop=stop, quiet=0.05, most=10) < 0.5


def test_idle_server_waits_no_longer_than_the_quiet_time():
    time.sleep(0.1)
    assert _waited(quiet=0.05, most=10) < 0.05


def test_the_served_application_holds_the_catch_up_while_it_answers():
    from server.background import Background

    answering, release = threading.Event(), threading.Event()

    def application(environ, start_response):
        answering.set()
        release.wait(5)
        start_response("200 OK", [])
        return [b"ok"]

    background = Background()
    try:
        wrapped = background.wrap(application)
        thread = threading.Thread(target=lambda: list(wrapped({}, lambda *a: None)))
        thread.start()
        assert answering.wait(5)
        held = _waited(quiet=0.05, most=0.3)
        release.set()
        thread.join()
    finally:
        background.stop()
    assert held >= 0.3


def test_the_catch_up_embeds_small_batches_and_waits_before_each(monkeypatch):
    from powercontext.search import vectors

    calls: list[str] = []
    monkeypatch.setattr(catch_up, "wait_for_quiet", lambda stop=None: calls.append("wait"))
    monkeypatch.setattr(
        vectors,
        "status",
        lambda index: vectors.VectorStatus(index.name, vectors.State.READY, "ready", "m", 3),
    )
    monkeypatch.setattr(vectors, "pending", lambda index: vectors.Pending(rows=3, missing=3))

    def rebuild(index, *, batch_size, progress, stop):
        calls.append(f"rebuild {batch_size}")
        for done in (2, 3):
            calls.append("batch")
            progress(done, 3)
        return type("Report", (), {"index": "done"})()

    monkeypatch.setattr(vectors, "rebuild", rebuild)
    from memory.search_index import MEMORY_INDEX

    catch_up.CatchUp()._catch_up(MEMORY_INDEX)
    assert calls == ["wait", f"rebuild {catch_up.BATCH}", "batch", "wait", "batch", "wait"]
    assert catch_up.BATCH <= 16
