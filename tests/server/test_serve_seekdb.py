"""``manage.py serve --engine seekdb``: OceanBase on a laptop in one command.

Starts a real seekdb (about a second, 1 GiB of memory, ~230 MB of disk), so it runs in
the SQLite half of the suite only: the OceanBase half already holds the session's seekdb,
and this machine runs one at a time.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest

from tests.conftest import engine
from tests.server.test_serve import REPO_ROOT, _env, _get, _serve, start_process

__all__ = ["start_process"]  # a fixture, used by name

SEEKDB_START_TIMEOUT = 180

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        engine() == "oceanbase",
        reason="the OceanBase half already runs the session's seekdb (one per machine)",
    ),
]


def _have_seekdb() -> bool:
    present = all(importlib.util.find_spec(name) for name in ("pylibseekdb", "MySQLdb"))
    if not present and os.environ.get("CI") != "true":
        pytest.skip("pylibseekdb or mysqlclient is not installed (requirements-oceanbase.txt)")
    return present


def _post(url, body):
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_serve_engine_seekdb_serves_on_oceanbase_in_the_data_directory(
    start_process, tmp_path, monkeypatch
):
    assert _have_seekdb()
    monkeypatch.setattr("tests.server.test_serve.START_TIMEOUT", SEEKDB_START_TIMEOUT)
    process, url, data = _serve(start_process, tmp_path, "--engine", "seekdb")
    assert data == "OceanBase database powercontext"
    status, _, body = _get(url + "health/ready")
    assert status == 200, body
    remembered = _post(
        url + "v1/memory/remember",
        {"scope_id": "laptop", "kind": "convention", "text": "Run make check first."},
    )
    found = _post(url + "v1/memory/search", {"scope_id": "laptop", "query": "make check"})
    assert [hit["text"] for hit in found["hits"]] == [remembered["entry"]["text"]]
    assert process.stop() == 0
    # seekdb kept its data in the data directory, and stopped with the server.
    assert (tmp_path / "seekdb" / "db").is_dir()
    assert not (tmp_path / "seekdb" / "database-url").exists()
    log = (tmp_path / "seekdb" / "seekdb-holder.log").read_text()
    assert re.search(r"^seekdb stopped$", log, re.MULTILINE), log


def test_serve_engine_seekdb_refuses_a_database_url(tmp_path):
    env = {
        **_env(tmp_path),
        "POWERCONTEXT_DATABASE_URL": "sqlite:///" + str(tmp_path / "other.sqlite3"),
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "serve", "--port", "0", "--engine", "seekdb"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "unset POWERCONTEXT_DATABASE_URL" in done.stderr
    assert not (tmp_path / "seekdb").exists()
