"""Secrets never reach the database file, with real processes: the hook captures a
prompt holding the five kinds of issue 27 into a real server, and ``redact_secrets`` and
``purge_sources`` erase what an earlier release stored; afterwards the bytes of the
SQLite files (database, write-ahead log, shared memory) hold none of it.

SQLite only by nature (it reads the file); the services are tested on both engines."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.hooks.conftest import LIVE_TOKEN, codex_payload, free_port, hook_env, live_post, run_hook

from . import secret_samples as s

pytestmark = pytest.mark.slow
REPO_ROOT = Path(__file__).resolve().parents[3]
SCOPE = "git:example.com/acme/secrets"
PRIVATE = "my home address is 12 Quiet Lane"


def server_env(home: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        POWERCONTEXT_HOME=str(home),
        POWERCONTEXT_API_TOKEN=LIVE_TOKEN,
        DJANGO_SETTINGS_MODULE="server.settings",
    )
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    env.pop("POWERCONTEXT_TEST_DATABASE", None)
    return env


def manage(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "manage.py"), *args],
        env=server_env(home),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


class Served:
    def __init__(self, home: Path, **env: str) -> None:
        self.home = home
        port = free_port()
        self.log = open(home / "server.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "manage.py"), "serve", "--port", str(port)],
            env={**server_env(home), **env},
            cwd=REPO_ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("server did not start:\n" + (home / "server.log").read_text())
            time.sleep(0.2)

    def wait_for_log(self, text: str, seconds: float = 60) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in (self.home / "server.log").read_text(errors="replace"):
                return True
            time.sleep(0.2)
        return False

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        return (self.home / "server.log").read_text()


def database_bytes(home: Path) -> bytes:
    """Every byte SQLite keeps for the database: the file, its log and shared memory."""
    files = sorted(home.glob("*.sqlite3*"))
    assert files, list(home.iterdir())
    return b"".join(path.read_bytes() for path in files)


def leaks(data: bytes, needles) -> list[str]:
    """The needles found in ``data``, as they were written or lower-cased (the
    full-text index keeps analyzer terms)."""
    lowered = data.lower()
    return [
        needle
        for needle in needles
        if needle.encode() in data or needle.lower().encode() in lowered
    ]


def test_a_prompt_captured_by_the_hook_leaves_no_secret_in_the_database(tmp_path):
    home = tmp_path / "server"
    home.mkdir()
    assert manage(home, "migrate", "--noinput").returncode == 0
    served = Served(home)
    try:
        prompt = f"{s.FIVE_KINDS_PROMPT}\n<private>{PRIVATE}</private>"
        agent_home = tmp_path / "agent"
        agent_home.mkdir()
        env = hook_env(
            agent_home,
            POWERCONTEXT_URL=served.url,
            POWERCONTEXT_API_TOKEN=LIVE_TOKEN,
            POWERCONTEXT_SCOPE_ID=SCOPE,
        )
        run = run_hook("codex", codex_payload(prompt, str(tmp_path)), env)
        assert run.returncode == 0
        # The capture arrived (a retry of the same turn answers its position).
        status, answer = live_post(
            served.url,
            "/v1/sources/content",
            {
                "scope_id": SCOPE,
                "source_id": "probe",
                "content": "the nightly import",
            },
        )
        assert (status, answer["position"]) == (202, 2)
        request = urllib.request.Request(
            served.url + "/metrics", headers={"Authorization": f"Bearer {LIVE_TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            metrics = response.read()
        assert b"powercontext_" in metrics
    finally:
        log = served.stop()
    data = database_bytes(home)
    assert leaks(data, (*s.FIVE_KINDS_SECRETS, s.AWS_SECRET, PRIVATE)) == []
    assert b"[redacted:openai-api-key]" in data
    assert b"[redacted:private-key]" in data
    assert b"Why does the nightly import fail" in data
    # Nor do the logs or the metrics hold any of it.
    assert leaks(log.encode(), (*s.FIVE_KINDS_SECRETS, PRIVATE, SCOPE)) == []
    assert leaks(metrics, (*s.FIVE_KINDS_SECRETS, PRIVATE, SCOPE)) == []


SEED = """
import django, json, sys
django.setup()
from powercontext import redaction
# As an earlier release wrote: nothing is redacted.
redaction.redact = redaction.Redacted
redaction.strip_private = redaction.Redacted
from memory.services import memory_remember
from powercontext.sources import source_capture
args = json.loads(sys.argv[1])
source_capture(scope_id=args["scope"], source_id="old-prompt", content=args["prompt"])
source_capture(scope_id=args["scope"], source_id="other-prompt", content="keep me: the importer")
memory_remember(scope_id=args["scope"], kind="note", text=args["note"], reason=args["reason"])
"""


def test_redact_secrets_and_purge_leave_no_byte_of_what_was_stored(tmp_path):
    home = tmp_path / "server"
    home.mkdir()
    assert manage(home, "migrate", "--noinput").returncode == 0
    note = f"The staging host takes password={s.PASSWORD} and token {s.GITHUB_TOKEN}"
    seeded = subprocess.run(
        [
            sys.executable,
            "-c",
            SEED,
            json.dumps(
                {
                    "scope": SCOPE,
                    "prompt": s.FIVE_KINDS_PROMPT,
                    "note": note,
                    "reason": f"from {s.STRIPE_KEY}",
                }
            ),
        ],
        env=server_env(home),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert seeded.returncode == 0, seeded.stderr
    needles = (*s.FIVE_KINDS_SECRETS, s.AWS_SECRET, s.STRIPE_KEY)
    assert leaks(database_bytes(home), needles)  # the test sees them while they are there

    redacted = manage(home, "redact_secrets")
    assert redacted.returncode == 0, redacted.stderr
    assert "captured sources: 1 row(s) redacted" in redacted.stdout
    assert "memory entry versions: 1 row(s) redacted" in redacted.stdout
    assert leaks(database_bytes(home), needles) == []
    checked = manage(home, "check_integrity")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    purged = manage(home, "purge_sources", "--scope", SCOPE, "--position", "2")
    assert purged.returncode == 0, purged.stderr
    assert leaks(database_bytes(home), ["keep me: the importer"]) == []
    checked = manage(home, "check_integrity")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "source.journal" in checked.stdout
