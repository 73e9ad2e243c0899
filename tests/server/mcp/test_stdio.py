"""``manage.py mcp_stdio`` launched the way an agent launches it, through the SDK's stdio
client, next to ``manage.py serve`` on the same data: the tools answer what the HTTP API
answers."""

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from powercontext_client import PowerContextClient, errors

from .conftest import call

REPO_ROOT = Path(__file__).resolve().parents[3]
SCOPE = "git:example.com/acme/stdio-widgets"
READY = re.compile(r"PowerContext serving on (http://127\.0\.0\.1:\d+)/")

pytestmark = pytest.mark.slow


def _env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("POWERCONTEXT_", "DJANGO_"))
    }
    env["POWERCONTEXT_HOME"] = str(home)
    return env


def _stdio(home: Path) -> Client:
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["manage.py", "mcp_stdio"],
            cwd=str(REPO_ROOT),
            env=_env(home),
        ),
        mode="legacy",
    )


@pytest.fixture
def served(tmp_path):
    """``manage.py serve`` on a free port, on ``tmp_path`` as its data home."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", "0"],
        cwd=REPO_ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 90
    url = None
    while url is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        match = READY.search(line)
        url = match.group(1) if match else None
    if url is None:
        process.kill()
        pytest.fail("manage.py serve did not start")
    yield tmp_path, url
    process.terminate()
    process.wait(20)


def test_stdio_tools_answer_what_the_http_api_answers(served):
    home, url = served
    pc = PowerContextClient(url, token="")

    def http_error(call_api) -> dict:
        with pytest.raises(errors.PowerContextError) as raised:
            call_api()
        error = raised.value
        return {"error": {"code": error.code, "message": error.message, "details": error.details}}

    async def scenario():
        async with _stdio(home) as mcp:
            names = [tool.name for tool in (await mcp.list_tools()).tools]
            assert len(names) == 8
            failed, written = await call(
                mcp, "remember_memory", {"scope_id": SCOPE, "kind": "note", "text": "Stdio works."}
            )
            assert not failed
            citation = written["entry"]["citation"]
            # The HTTP server sees the write: one database.
            get = {"scope_id": SCOPE, "citation": citation}
            assert await call(mcp, "get_memory_entry", get) == (False, pc.get_memory_entry(**get))
            search = {"scope_id": SCOPE, "query": "stdio"}
            assert await call(mcp, "search_memory", search) == (False, pc.search_memory(**search))
            listing = {"scope_id": SCOPE}
            assert await call(mcp, "list_memory_entries", listing) == (
                False,
                pc.list_memory_entries(**listing),
            )
            stale = {"scope_id": SCOPE, "kind": "n", "text": "t", "expected_revision": 0}
            assert await call(mcp, "remember_memory", stale) == (
                True,
                http_error(lambda: pc.remember_memory(**stale)),
            )
            failed, revised = await call(
                mcp, "revise_memory_entry", {**get, "kind": "note", "text": "Stdio works!"}
            )
            assert not failed
            current = {"scope_id": SCOPE, "citation": revised["entry"]["citation"]}
            failed, retired = await call(mcp, "retire_memory_entry", current)
            assert not failed
            assert await call(mcp, "retire_memory_entry", current) == (
                True,
                http_error(lambda: pc.retire_memory_entry(**current)),
            )
            failed, candidate = await call(
                mcp,
                "propose_experience",
                {
                    "scope_id": SCOPE,
                    "proposal": {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"},
                    "artifact_refs": [retired["memory"]],
                },
            )
            assert (failed, candidate["status"]) == (False, "pending")
            missing = {
                "scope_id": SCOPE,
                "artifact": {
                    "family": "experience",
                    "artifact_id": "exp_" + "0" * 32,
                    "revision": 1,
                },
            }
            failed, error = await call(mcp, "get_experience", missing)
            assert (failed, error["error"]["code"]) == (True, "artifact_not_found")

    try:
        asyncio.run(scenario())
        changes = pc.memory_changes(scope_id=SCOPE, since_revision=0)["revisions"]
        ops = [revision["changes"][0]["op"] for revision in changes]
        assert ops == ["add", "revise", "deactivate"]
    finally:
        pc.close()
