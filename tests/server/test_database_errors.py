"""A database PowerContext cannot use is said in one or two lines naming the setting, its
value (password masked) and the document to read: never a traceback."""

import importlib.util
import os
import socket
import subprocess
import sys

import pytest

from server.database_errors import masked
from tests.server.test_serve import REPO_ROOT, _env


def _closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(tmp_path, url, *command):
    done = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=REPO_ROOT,
        env={**_env(tmp_path), "POWERCONTEXT_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert 1 <= len(lines) <= 2, done.stderr
    assert "secret-pw" not in done.stderr + done.stdout
    return done.stderr


def test_masked_hides_the_password_only():
    assert masked("oceanbase://pc%40tenant:p%40ss@db.example:2881/pc") == (
        "oceanbase://pc%40tenant:***@db.example:2881/pc"
    )
    assert masked("oceanbase://root@localhost/pc?unix_socket=/x") == (
        "oceanbase://root@localhost/pc?unix_socket=/x"
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["serve", "migrate"])
def test_an_unsupported_engine_names_the_setting_and_what_is_supported(tmp_path, command):
    message = _run(tmp_path, "postgres://pc:secret-pw@127.0.0.1:5432/pc", command)
    assert "POWERCONTEXT_DATABASE_URL=postgres://pc:***@127.0.0.1:5432/pc" in message
    assert "docs/oceanbase.md" in message
    assert "psycopg" not in message


@pytest.mark.slow
@pytest.mark.parametrize("command", ["serve", "migrate", "check_integrity"])
def test_an_unreachable_oceanbase_names_the_setting_and_the_doc(tmp_path, command):
    if importlib.util.find_spec("MySQLdb") is None and os.environ.get("CI") != "true":
        pytest.skip("mysqlclient is not installed (requirements-oceanbase.txt)")
    url = f"oceanbase://pc:secret-pw@127.0.0.1:{_closed_port()}/pc"
    message = _run(tmp_path, url, command)
    assert f"POWERCONTEXT_DATABASE_URL={masked(url)}" in message
    assert "cannot connect" in message
    assert "docs/oceanbase.md" in message


@pytest.mark.slow
def test_a_sqlite_file_in_a_missing_directory_names_the_setting(tmp_path):
    url = f"sqlite:///{tmp_path}/missing/powercontext.sqlite3"
    message = _run(tmp_path, url, "serve", "--port", "0")
    assert f"POWERCONTEXT_DATABASE_URL={url}" in message
    assert "unable to open database file" in message


@pytest.mark.slow
def test_an_unreadable_url_names_the_setting(tmp_path):
    message = _run(tmp_path, "oceanbase://pc:secret-pw@127.0.0.1:port/pc", "migrate")
    assert "POWERCONTEXT_DATABASE_URL=oceanbase://pc:***@127.0.0.1:port/pc cannot be read" in (
        message
    )
