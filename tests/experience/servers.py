"""Real ``manage.py serve`` processes for the tests that need true concurrency or a
browser. Always 127.0.0.1 with port 0. Their database is a SQLite file in ``home`` or,
when the suite runs on OceanBase, a database of its own on the suite's OceanBase."""

import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import engine

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"^PowerContext serving on (http://127\.0\.0\.1:\d+/) ")
START_TIMEOUT = 90
AGENT_TOKEN = "agent-token-for-tests"


def _oceanbase_database_url(home: Path) -> str:
    """A fresh database named after ``home`` on the suite's OceanBase, created once."""
    from urllib.parse import urlsplit, urlunsplit

    from django.db import connection

    name = "pc_" + hashlib.sha256(str(home).encode()).hexdigest()[:16]
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE DATABASE IF NOT EXISTS {connection.ops.quote_name(name)} "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )
    parts = urlsplit(os.environ["POWERCONTEXT_DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + name))


def environment(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    if engine() == "oceanbase":
        env["POWERCONTEXT_DATABASE_URL"] = _oceanbase_database_url(home)
    env.update(
        POWERCONTEXT_HOME=str(home),
        POWERCONTEXT_API_TOKEN=AGENT_TOKEN,
        DJANGO_SETTINGS_MODULE="server.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


def manage(home: Path, *args: str) -> str:
    """Run a management command against ``home``'s database; its stdout."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


class Server:
    def __init__(self, home: Path, threads: int = 4):
        self.popen = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", "0", "--threads", str(threads)],
            cwd=REPO_ROOT,
            env=environment(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def read():
            for line in self.popen.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            if line is None:
                raise RuntimeError("serve exited before it was ready")
            match = READY.match(line)
            if match:
                self.url = match.group(1)
                return

    def stop(self):
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()

    def post(self, route: str, body: dict, token: str = AGENT_TOKEN) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.url + route,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
