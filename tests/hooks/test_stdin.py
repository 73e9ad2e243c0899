"""A host that never closes the hook's stdin cannot hold the agent up.

The budget (1.5 s by default) counts from process start and covers reading stdin too:
when it runs out before stdin is closed, the hook exits 0 with nothing on stdout and
the ``skipped`` diagnostic, and makes no call.
"""

import json
import subprocess
import sys
import time

import pytest

from .conftest import (
    COMPONENTS,
    ENTRY_SCRIPTS,
    PAYLOADS,
    Reply,
    accepted,
    hook_env,
    prepared,
)

# The budget, plus the interpreter's start and exit and the test's own spawn.
SLACK = 1.0


def run_with_open_stdin(agent, tmp_path, url, written: bytes, budget_ms=None):
    """Start the hook, write ``written`` to its stdin and never close it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = hook_env(
        home,
        POWERCONTEXT_URL=url,
        POWERCONTEXT_SCOPE_ID="git:example.com/acme/widgets",
        POWERCONTEXT_HOOK_TIMEOUT_MS=budget_ms,
    )
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-S", str(ENTRY_SCRIPTS[agent])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.write(written)
        process.stdin.flush()
        # Wait for the exit without closing stdin (communicate() would close it).
        returncode = process.wait(timeout=10)
        elapsed = time.monotonic() - started
        return returncode, process.stdout.read(), process.stderr.read(), elapsed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("agent", list(COMPONENTS))
@pytest.mark.parametrize("written", ["nothing", "partial", "whole"])
def test_stdin_never_closed_is_skipped_within_the_budget(agent, written, tmp_path, fake_server):
    server = fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared("a memory")),
            "/v1/sources/content": Reply(202, accepted()),
        }
    )
    payload = json.dumps(PAYLOADS[agent]("How do we migrate?", str(tmp_path))).encode()
    data = {"nothing": b"", "partial": payload[:20], "whole": payload}[written]

    returncode, stdout, stderr, elapsed = run_with_open_stdin(agent, tmp_path, server.url, data)

    assert returncode == 0
    assert stdout == b""
    assert json.loads(stderr) == {
        "component": COMPONENTS[agent],
        "event": "context_prepare",
        "outcome": "skipped",
        "http_status": None,
        "context_status": None,
        "content_bytes": None,
    }
    assert elapsed < 1.5 + SLACK
    assert server.requests == []


def test_the_stdin_deadline_is_the_configured_budget(tmp_path, refused_url):
    returncode, stdout, stderr, elapsed = run_with_open_stdin(
        "codex", tmp_path, refused_url, b"", budget_ms="300"
    )

    assert (returncode, stdout) == (0, b"")
    assert json.loads(stderr)["outcome"] == "skipped"
    assert 0.3 <= elapsed < 0.3 + SLACK
