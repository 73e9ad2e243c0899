"""Fixtures for the hook tests: real hook processes against small fake HTTP servers.

Nothing here needs Django; ``pytest -p no:django tests/hooks`` runs these tests.
"""

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HOOKS_DIR = REPO_ROOT / "hooks"
ENTRY_SCRIPTS = {
    "codex": HOOKS_DIR / "codex_user_prompt_submit.py",
    "claude": HOOKS_DIR / "claude_user_prompt_submit.py",
}
COMPONENTS = {"codex": "powercontext.codex.recall", "claude": "powercontext.claude.recall"}
SCHEMA = "powercontext.prepared-context.v1"
DIAGNOSTIC_KEYS = {
    "component",
    "event",
    "outcome",
    "http_status",
    "context_status",
    "content_bytes",
}


def load_hook_module(name: str = "powercontext_hook"):
    """Import a hooks/ module by path (hooks/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("_pc_" + name, HOOKS_DIR / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------ fake server


@dataclass
class Reply:
    """What the fake server answers on one route."""

    status: int = 200
    body: bytes | str | dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False
    content_length: bool = True
    hang: bool = False  # read the request, then never answer
    delay: float = 0.0

    def body_bytes(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body, ensure_ascii=False).encode("utf-8")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Route = Reply | Callable[[Recorded], Reply]


class FakeServer:
    """A threaded HTTP server on loopback that records requests and plays given replies."""

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[Recorded] = []
        self.stop_event = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                server.requests.append(recorded)
                route = server.routes.get(self.path)
                if route is None:
                    reply = Reply(404, {"error": {"code": "not_found", "message": "no route"}})
                else:
                    reply = route(recorded) if callable(route) else route
                if reply.hang:
                    server.stop_event.wait(30)
                    self.close_connection = True
                    return
                if reply.delay:
                    server.stop_event.wait(reply.delay)
                payload = reply.body_bytes()
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                elif reply.content_length:
                    self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if reply.chunked:
                        step = 64 * 1024
                        for start in range(0, len(payload), step):
                            piece = payload[start : start + step]
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the hook stops reading an oversized body, as it should
                self.close_connection = True

            do_POST = _handle
            do_GET = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]


@pytest.fixture
def fake_server():
    servers: list[FakeServer] = []

    def make(routes: dict[str, Route] | None = None) -> FakeServer:
        server = FakeServer(routes).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def silent_url():
    """A port that accepts connections (the kernel does) but never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


@pytest.fixture
def refused_url():
    """A loopback port nobody listens on."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


# ---------------------------------------------------------------------- hook payloads


def prepared(content: str | None, /, status: str | None = None, **overrides: Any) -> dict:
    """A prepared-context response body (valid unless overridden)."""
    body = {
        "schema": SCHEMA,
        "status": status or ("ready" if content else "empty"),
        "content": content,
        "content_bytes": len(content.encode("utf-8")) if content else 0,
    }
    body.update(overrides)
    return body


def accepted(source_id: str = "x", position: int = 1) -> dict:
    return {
        "status": "accepted",
        "source": {"name": "content", "source_id": source_id},
        "position": position,
    }


def codex_payload(prompt: str, cwd: str, **extra: Any) -> dict:
    payload = {
        "session_id": "019a6b1e-5a4f-7c3d-9e2b-codexsession",
        "turn_id": "019a6b1e-6b50-7d4e-8f3c-codexturn0001",
        "transcript_path": None,
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "prompt": prompt,
    }
    payload.update(extra)
    return payload


def claude_payload(prompt: str, cwd: str, **extra: Any) -> dict:
    payload = {
        "session_id": "6f1c2d3e-4b5a-4c6d-8e7f-claudesession",
        "transcript_path": "/home/dev/.claude/projects/-work-demo/6f1c2d3e.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    payload.update(extra)
    return payload


PAYLOADS = {"codex": codex_payload, "claude": claude_payload}


@dataclass
class HookRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    elapsed: float

    def diagnostics(self) -> list[dict]:
        return [json.loads(line) for line in self.stderr.decode("utf-8").splitlines() if line]

    def diagnostic(self) -> dict:
        lines = self.stderr.decode("utf-8").splitlines()
        assert len(lines) == 1, self.stderr
        return json.loads(lines[0])

    def context(self) -> str:
        output = json.loads(self.stdout)
        assert set(output) == {"hookSpecificOutput"}
        specific = output["hookSpecificOutput"]
        assert set(specific) == {"hookEventName", "additionalContext"}
        assert specific["hookEventName"] == "UserPromptSubmit"
        return specific["additionalContext"]


def hook_env(home: Path, **env: str | None) -> dict[str, str]:
    """A clean environment: nothing of the caller's POWERCONTEXT_* settings leaks in."""
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C",  # the hook must not depend on a UTF-8 locale
        # The SessionStart hook's per-session markers (Codex's compaction): one test's
        # session must not be another's.
        "TMPDIR": str(home),
    }
    for name, value in env.items():
        if value is not None:
            base[name] = value
    return base


def run_hook(
    agent: str,
    payload: dict | bytes,
    env: dict[str, str],
    python: str = sys.executable,
    timeout: float = 15,
) -> HookRun:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
    started = time.monotonic()
    completed = subprocess.run(
        [python, "-S", str(ENTRY_SCRIPTS[agent])],
        input=data,
        capture_output=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    return HookRun(
        completed.returncode, completed.stdout, completed.stderr, time.monotonic() - started
    )


@pytest.fixture
def hook(tmp_path):
    """Run a hook process: ``hook(agent, url, prompt=..., payload=..., **env)``."""
    home = tmp_path / "home"
    home.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()

    def call(
        agent: str,
        url: str | None,
        prompt: str = "How do we run the migrations on OceanBase?",
        payload: dict | bytes | None = None,
        python: str = sys.executable,
        **env: str | None,
    ) -> HookRun:
        if payload is None:
            payload = PAYLOADS[agent](prompt, str(workdir))
        env.setdefault("POWERCONTEXT_SCOPE_ID", "git:example.com/acme/widgets")
        return run_hook(
            agent,
            payload,
            hook_env(home, POWERCONTEXT_URL=url, **env),
            python=python,
        )

    call.workdir = workdir  # type: ignore[attr-defined]
    call.home = home  # type: ignore[attr-defined]
    return call


# ------------------------------------------------------------------- live server


LIVE_TOKEN = "live-test-token-0123456789abcdef"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def live_post(base, path, body):
    """POST JSON to the live server with the agents' token: (status, body)."""
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + LIVE_TOKEN},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


# The live servers by URL: a test that has only the URL can reach the data directory.
SERVERS: dict[str, "ServerProcess"] = {}

_MARK = """
import django, sys
django.setup()
from memory.models import MemoryEntryVersion
from memory.services import session_mark
scope, text = sys.argv[1:3]
version = MemoryEntryVersion.objects.filter(scope_id=scope, text=text).latest("created_at")
session_mark(entry_version=version, marked_by="test-reviewer")
"""


def mark_for_session_start(url: str, scope: str, text: str) -> None:
    """Mark the entry holding ``text`` for session start, as a reviewer does on the desk
    (issue 38: only a marked entry opens every session), in the live server's data."""
    server = SERVERS[url]
    subprocess.run(
        [sys.executable, "-c", _MARK, scope, text],
        env=server.env,
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )


class ServerProcess:
    """``manage.py serve`` on a free loopback port with its own data directory."""

    def __init__(self, home: Path, token: str | None) -> None:
        self.home = home
        # The hook sees only HTTP, so the embedded default database serves it on every run
        # of the suite (the OceanBase run included).
        env = dict(
            os.environ,
            POWERCONTEXT_HOME=str(home),
            DJANGO_SETTINGS_MODULE="server.settings",
        )
        for name in ("POWERCONTEXT_DATABASE_URL", "POWERCONTEXT_TEST_DATABASE"):
            env.pop(name, None)
        env.pop("POWERCONTEXT_API_TOKEN", None)
        if token is not None:
            env["POWERCONTEXT_API_TOKEN"] = token
        manage = str(REPO_ROOT / "manage.py")
        subprocess.run(
            [sys.executable, manage, "migrate", "--noinput"],
            env=env,
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
            timeout=300,
        )
        self.port = free_port()
        self.log = open(home / "server.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, manage, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            cwd=REPO_ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        SERVERS[self.url] = self
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("server did not become ready:\n" + (home / "server.log").read_text())
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="session")
def powercontext_server(tmp_path_factory):
    """A live server that requires ``LIVE_TOKEN``."""
    server = ServerProcess(tmp_path_factory.mktemp("powercontext-home"), LIVE_TOKEN)
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def powercontext_server_without_token(tmp_path_factory):
    """A live server with no token configured: the README's default setup."""
    server = ServerProcess(tmp_path_factory.mktemp("powercontext-home-open"), None)
    yield server.url
    server.stop()
