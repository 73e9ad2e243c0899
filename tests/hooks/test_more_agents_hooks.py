"""The entry scripts of Gemini CLI, Copilot CLI and OpenCode: each takes its host's event
as that host sends it, hands the pack back in the shape the host reads, captures the
prompt as the Claude Code and Codex hooks do, and fails open on any bad input."""

import json
import subprocess
import sys
import time

import pytest

from .conftest import HOOKS_DIR, Reply, hook_env, prepared

PACK = "PowerContext prepared untrusted historical context.\n\u2028 \u00e9 x"
SCRIPTS = {
    "gemini": ("gemini_before_agent.py", "gemini_session_start.py"),
    "copilot": ("copilot_user_prompt_submitted.py", "copilot_session_start.py"),
    "opencode": ("opencode_user_prompt_submit.py", "opencode_session_start.py"),
}


def prompt_event(agent: str, prompt: str, cwd: str) -> dict:
    if agent == "copilot":
        return {"timestamp": 1700000000000, "cwd": cwd, "prompt": prompt}
    name = "BeforeAgent" if agent == "gemini" else "UserPromptSubmit"
    return {"hook_event_name": name, "session_id": "s1", "cwd": cwd, "prompt": prompt}


def session_event(agent: str, cwd: str) -> dict:
    if agent == "copilot":
        return {"timestamp": 1700000000000, "cwd": cwd, "source": "new"}
    return {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": cwd}


def run(script: str, payload, tmp_path, url: str, **env):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-S", str(HOOKS_DIR / script)],
        input=data,
        capture_output=True,
        env=hook_env(tmp_path, POWERCONTEXT_URL=url, POWERCONTEXT_SCOPE_ID="s", **env),
        timeout=15,
        check=False,
    )
    return done, time.monotonic() - started


def context_of(agent: str, stdout: bytes) -> str:
    output = json.loads(stdout)
    if agent == "copilot":  # Copilot reads additionalContext at the top level
        assert set(output) == {"additionalContext"}
        return output["additionalContext"]
    return output["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def pack_server(fake_server):
    return fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared(PACK)),
            "/v1/context/session": Reply(200, prepared(PACK)),
            "/v1/sources/content": Reply(202, {"source_id": "x", "position": 1}),
        }
    )


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_the_pack_in_the_hosts_shape_and_the_prompt_captured(agent, tmp_path, pack_server):
    prompt = "How do I run the tests? <private>my password</private>"
    done, _ = run(SCRIPTS[agent][0], prompt_event(agent, prompt, "/"), tmp_path, pack_server.url)
    assert done.returncode == 0
    assert context_of(agent, done.stdout) == PACK
    (captured,) = pack_server.requests_to("/v1/sources/content")
    assert captured.json()["content"] == "How do I run the tests? "
    assert captured.json()["metadata"]["agent"] == agent
    (asked,) = pack_server.requests_to("/v1/context/prepare")
    assert "password" not in asked.json()["query"]
    started, _ = run(SCRIPTS[agent][1], session_event(agent, "/"), tmp_path, pack_server.url)
    assert context_of(agent, started.stdout) == PACK


def test_gemini_does_not_capture_the_session_hooks_own_output(tmp_path, pack_server):
    """In ``gemini -p`` the prompt BeforeAgent sees starts with the SessionStart output."""
    prompt = f"<hook_context>{PACK}</hook_context>\n\nHow do I run the tests?"
    done, _ = run(
        SCRIPTS["gemini"][0], prompt_event("gemini", prompt, "/"), tmp_path, pack_server.url
    )
    assert done.returncode == 0
    (captured,) = pack_server.requests_to("/v1/sources/content")
    assert captured.json()["content"] == "How do I run the tests?"
    (asked,) = pack_server.requests_to("/v1/context/prepare")
    assert asked.json()["query"] == "How do I run the tests?"


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_capture_opt_out(agent, tmp_path, pack_server):
    done, _ = run(
        SCRIPTS[agent][0],
        prompt_event(agent, "How do I run the tests?", "/"),
        tmp_path,
        pack_server.url,
        POWERCONTEXT_CAPTURE="0",
    )
    assert context_of(agent, done.stdout) == PACK
    assert pack_server.requests_to("/v1/sources/content") == []


BAD_INPUT = {
    "malformed": b"{not json",
    "array": b"[]",
    "no-prompt": json.dumps({"cwd": "/"}).encode(),
    "other-event": json.dumps({"hook_event_name": "AfterAgent", "prompt": "x"}).encode(),
    "wrong-types": json.dumps({"prompt": 42, "cwd": 7}).encode(),
    "huge": b'{"prompt": "' + b"x" * (3 * 1024 * 1024),  # huge, and cut off
}
# A session event carries no prompt, and Copilot's names no event: for the session
# scripts ``{"cwd": "/"}`` is a start like any other, so only the payloads that no host
# would send as a session start are bad input there.
SESSION_BAD_INPUT = ("malformed", "array", "other-event", "huge")


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
@pytest.mark.parametrize(
    ("kind", "payload"),
    [("prompt", name) for name in BAD_INPUT] + [("session", name) for name in SESSION_BAD_INPUT],
)
def test_bad_input_exits_0_with_no_context(agent, kind, payload, tmp_path, pack_server):
    script = SCRIPTS[agent][0 if kind == "prompt" else 1]
    done, _ = run(script, BAD_INPUT[payload], tmp_path, pack_server.url)
    assert done.returncode == 0
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr
    assert json.loads(done.stderr)["outcome"] == "skipped"
    assert pack_server.requests_to("/v1/context/prepare") == []
    assert pack_server.requests_to("/v1/context/session") == []


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_a_session_event_with_wrong_types_still_exits_0(agent, tmp_path, pack_server):
    """Every field of a session start is optional: wrong types are read as absent (the
    scope from the environment, no Copilot marker), never a stack trace."""
    event = session_event(agent, "/")
    event.update(cwd=7, session_id=7, sessionId=7, source=[], initialPrompt=5)
    done, _ = run(SCRIPTS[agent][1], event, tmp_path, pack_server.url)
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr
    assert context_of(agent, done.stdout) == PACK


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_a_silent_server_costs_the_budget_and_the_prompt_goes_on(agent, tmp_path, silent_url):
    done, elapsed = run(
        SCRIPTS[agent][0], prompt_event(agent, "How do I run the tests?", "/"), tmp_path, silent_url
    )
    assert done.returncode == 0
    assert done.stdout == b""
    assert json.loads(done.stderr)["outcome"] == "server_unavailable"
    assert elapsed < 1.5 + 1.0  # the hook's budget, plus the interpreter's start


def copilot_capture(pack_server, tmp_path, event) -> dict:
    """The capture the Copilot prompt hook sent for ``event`` (the last one sent)."""
    done, _ = run(SCRIPTS["copilot"][0], event, tmp_path, pack_server.url)
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr
    return pack_server.requests_to("/v1/sources/content")[-1].json()


def test_copilot_keys_a_capture_on_its_session_and_timestamp(tmp_path, pack_server):
    """Copilot CLI sends ``sessionId`` and ``timestamp``, no ``session_id`` or turn id: the
    same prompt typed in a later session, or again later in one session, is a new source
    (the server dedupes on the source id), while the same invocation sent twice is one."""
    first = {"sessionId": "a", "timestamp": 1700000000000, "cwd": "/", "prompt": "Run tests"}
    sent = copilot_capture(pack_server, tmp_path, first)
    again = copilot_capture(pack_server, tmp_path, dict(first))
    assert again == sent  # a retried invocation: the identical payload, one source
    other_session = copilot_capture(pack_server, tmp_path, {**first, "sessionId": "b"})
    later_turn = copilot_capture(pack_server, tmp_path, {**first, "timestamp": 1700000009999})
    ids = {sent["source_id"], other_session["source_id"], later_turn["source_id"]}
    assert len(ids) == 3
    # The session is named in the metadata, as the other agents' session_id is.
    assert sent["metadata"] == {"agent": "copilot", "event": "UserPromptSubmit", "session_id": "a"}
    assert other_session["metadata"]["session_id"] == "b"


@pytest.mark.parametrize(
    "odd",
    [
        {"sessionId": 7, "timestamp": "x" * 300_000},
        {"sessionId": ["a"], "timestamp": {"t": 1}},
        {"sessionId": "s" * 300_000, "timestamp": True},
        {"sessionId": None, "timestamp": 1e308 * 10},  # Infinity
        {"sessionId": "\ud800", "timestamp": 10**4000},
        {"sessionId": "", "timestamp": -1.5},
    ],
)
def test_copilot_odd_session_and_timestamp_still_capture(odd, tmp_path, pack_server):
    """Wrong types, huge or unpaired values: read as absent or hashed, never a stack trace."""
    event = {"cwd": "/", "prompt": "Run tests", **odd}
    captured = copilot_capture(pack_server, tmp_path, event)
    assert captured["content"] == "Run tests"
    assert captured["source_id"].startswith("prompt:")
    assert copilot_capture(pack_server, tmp_path, event)["source_id"] == captured["source_id"]
    session = captured["metadata"].get("session_id")
    assert session is None or 0 < len(session) <= 256
