"""``serve`` embeds, in the background, the entries that have no vector: here entries
written with the semantic channel off, as an upgraded data directory's are until their
vectors are rebuilt. A real server process, stopped mid-way and started again."""

import json
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

# The real-process helpers of the serve tests, and their fixture (imported to be used).
from tests.server.test_serve import REPO_ROOT, _env, _serve, start_process  # noqa: F401

pytestmark = pytest.mark.slow

SCOPE = "catch-up"
ENTRIES = 700  # six batches of the rebuild's REBUILD_BATCH: stopped after the first, not done
STORED = "memory_activeentry_vec_auxiliary"  # one row per stored vector (a plain table)

WRITE = f"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory import services
for number in range({ENTRIES}):
    services.memory_remember(
        scope_id={SCOPE!r}, kind="note", text=f"Release {{number}} shipped on a Tuesday."
    )
services.memory_remember(
    scope_id={SCOPE!r}, kind="note", text="The PostgreSQL pool runs out of connections."
)
"""


def _post(base_url, path, body):
    request = urllib.request.Request(
        base_url + path.lstrip("/"),
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _ready_detail(base_url):
    with urllib.request.urlopen(base_url + "health/ready", timeout=30) as response:
        return json.loads(response.read())["checks"]["vector_index"]["detail"]


def _stored(tmp_path):
    """How many vectors are stored: 0 while the vector table does not exist (yet, or
    while a model change recreates it). A table the server holds locked is waited for
    (``timeout``), and a lock that outlasts it fails the test rather than reading as 0."""
    db = sqlite3.connect(tmp_path / "powercontext.sqlite3", timeout=30)
    try:
        return db.execute(f"SELECT count(*) FROM {STORED}").fetchone()[0]  # noqa: S608
    except sqlite3.OperationalError as error:
        if f"no such table: {STORED}" in str(error):
            return 0
        raise
    finally:
        db.close()


def _caught_up(base_url):
    """The memory index is ready and nothing embeds in the background any more. (A model
    change records the new model, and so says "ready", before the first batch of the
    re-embedding is written: "ready" alone is not "every vector is there".)"""
    detail = _ready_detail(base_url)
    return "embedding in the background" not in detail and (
        "memory_activeentry: ready" in detail or detail == "ready"
    )


def test_serve_embeds_missing_vectors_in_the_background_stops_and_goes_on(
    start_process,  # noqa: F811 - the fixture imported above
    tmp_path,
):
    subprocess.run(
        [sys.executable, "-c", WRITE],
        cwd=REPO_ROOT,
        env=_env(tmp_path, POWERCONTEXT_EMBEDDINGS="off"),
        check=True,
        timeout=300,
    )
    assert _stored(tmp_path) == 0

    # Stopped while it embeds: it stops between batches, promptly, with what it wrote.
    first, base_url, _ = _serve(start_process, tmp_path)
    deadline = time.monotonic() + 60
    while "embedding in the background" not in _ready_detail(base_url):
        assert time.monotonic() < deadline, _ready_detail(base_url)
        time.sleep(0.05)
    began = time.monotonic()
    assert first.stop() == 0
    assert time.monotonic() - began < 20
    partial = _stored(tmp_path)
    assert partial < ENTRIES + 1

    # Started again: it goes on, and the entry is found by meaning alone.
    second, base_url, _ = _serve(start_process, tmp_path)
    deadline = time.monotonic() + 120
    while _stored(tmp_path) < ENTRIES + 1:
        assert time.monotonic() < deadline, (_stored(tmp_path), _ready_detail(base_url))
        time.sleep(0.2)
    while "embedding in the background" in _ready_detail(base_url):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "memory_activeentry: ready" in _ready_detail(base_url)
    found = _post(
        base_url,
        "/v1/memory/search",
        {"scope_id": SCOPE, "query": "database connection limit reached", "mode": "vector"},
    )
    assert found["mode"] == "vector"
    assert "PostgreSQL pool" in found["hits"][0]["text"]
    assert second.stop() == 0
    assert re.search(r"memory_activeentry vectors: .*embedding in the background", second.stderr)


def _recorded_identity(tmp_path):
    with sqlite3.connect(tmp_path / "powercontext.sqlite3") as db:
        (identity,) = db.execute(
            'SELECT model_identity FROM powercontext_vectorindexstate WHERE "index" = ?',
            ["memory_activeentry"],
        ).fetchone()
    return identity


def test_serve_re_embeds_the_vectors_of_another_model_in_the_background(
    start_process,  # noqa: F811 - the fixture imported above
    tmp_path,
):
    """An upgrade that changes the model's file changes its identity (the vectors of the
    int8 form a machine derived for itself, before the committed one): every stored vector
    is then another model's, and serve re-embeds them all while it answers. Here the
    entries were embedded by the shipped form, another identity."""
    subprocess.run(
        [sys.executable, "-c", WRITE.replace(f"range({ENTRIES})", "range(40)")],
        cwd=REPO_ROOT,
        env=_env(tmp_path, POWERCONTEXT_EMBEDDING_FORM="shipped"),
        check=True,
        timeout=300,
    )
    old = _recorded_identity(tmp_path)
    assert _stored(tmp_path) == 41

    server, base_url, _ = _serve(start_process, tmp_path)
    deadline = time.monotonic() + 120
    while not _caught_up(base_url):
        assert time.monotonic() < deadline, _ready_detail(base_url)
        time.sleep(0.1)
    assert _recorded_identity(tmp_path) != old
    assert _stored(tmp_path) == 41
    found = _post(
        base_url,
        "/v1/memory/search",
        {"scope_id": SCOPE, "query": "database connection limit reached", "mode": "vector"},
    )
    assert "PostgreSQL pool" in found["hits"][0]["text"]
    assert server.stop() == 0
