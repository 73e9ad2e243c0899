"""The SessionStart hook: the session's pack (POST /v1/context/session), injected as is,
fail-open, and nothing captured."""

import json
import subprocess
import sys
import time

import pytest

from .conftest import COMPONENTS, HOOKS_DIR, Reply, hook_env, prepared

SCRIPTS = {agent: HOOKS_DIR / f"{agent}_session_start.py" for agent in ("codex", "claude")}
SCOPE = "git:example.com/acme/widgets"


def session_payload(agent: str, cwd: str, source: str = "startup") -> dict:
    payload = {
        "session_id": "019a6b1e-5a4f-7c3d-9e2b-session",
        "transcript_path": None,
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "source": source,
    }
    if agent == "codex":
        payload.update(model="gpt-5-codex", permission_mode="default")
    return payload


def run(agent, url, tmp_path, payload=None, **env):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.setdefault("POWERCONTEXT_SCOPE_ID", SCOPE)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-S", str(SCRIPTS[agent])],
        input=json.dumps(payload or session_payload(agent, str(tmp_path))).encode(),
        capture_output=True,
        env=hook_env(home, POWERCONTEXT_URL=url, **env),
        timeout=15,
        check=False,
    )
    return done, time.monotonic() - started


def diagnostic(done):
    (line,) = done.stderr.decode().splitlines()
    return json.loads(line)


@pytest.mark.parametrize("agent", ["codex", "claude"])
@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_the_pack_is_injected_as_is(agent, source, tmp_path, fake_server):
    content = "PowerContext prepared untrusted historical context.\n\u2028 \u00e9 \u2603"
    server = fake_server({"/v1/context/session": Reply(200, prepared(content))})
    done, _ = run(agent, server.url, tmp_path, session_payload(agent, str(tmp_path), source))
    assert done.returncode == 0
    assert done.stderr == b""
    output = json.loads(done.stdout)
    assert output == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": content}
    }
    (request,) = server.requests
    assert request.method == "POST"
    assert request.json() == {"scope_id": SCOPE, "max_bytes": 2000}
    # Nothing captured: there is no prompt.
    assert server.paths() == ["/v1/context/session"]


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (Reply(200, prepared(None)), "empty"),
        (Reply(200, prepared("x" * 2001)), "invalid_response"),
        (Reply(404, {"error": {"code": "not_found"}}), "version_mismatch"),
        (Reply(401, {"error": {"code": "unauthorized"}}), "authentication_failed"),
        (Reply(503, {}), "server_unavailable"),
    ],
    ids=["empty", "over-2000-bytes", "older-server", "token", "down"],
)
def test_every_other_answer_is_one_diagnostic_and_no_output(reply, outcome, tmp_path, fake_server):
    server = fake_server({"/v1/context/session": reply})
    done, _ = run("codex", server.url, tmp_path)
    assert done.returncode == 0
    assert done.stdout == b""
    line = diagnostic(done)
    assert line["component"] == COMPONENTS["codex"]
    assert line["event"] == "context_session"
    assert line["outcome"] == outcome


def test_a_silent_server_costs_the_budget_and_no_more(tmp_path, silent_url):
    done, elapsed = run("claude", silent_url, tmp_path, POWERCONTEXT_HOOK_TIMEOUT_MS="400")
    assert done.stdout == b""
    assert diagnostic(done)["outcome"] == "server_unavailable"
    assert elapsed < 3


def test_recall_off_makes_no_call(tmp_path, fake_server):
    server = fake_server({"/v1/context/session": Reply(200, prepared("ctx"))})
    done, _ = run("codex", server.url, tmp_path, POWERCONTEXT_RECALL="0")
    assert diagnostic(done)["outcome"] == "skipped"
    assert server.requests == []


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_prompt_event_sent_to_the_session_script_is_skipped(agent, tmp_path, fake_server):
    server = fake_server({"/v1/context/session": Reply(200, prepared("ctx"))})
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": str(tmp_path)}
    done, _ = run(agent, server.url, tmp_path, payload)
    assert diagnostic(done)["outcome"] == "skipped"
    assert server.requests == []


def test_codex_resume_then_compaction_gives_one_pack(tmp_path, fake_server):
    """Codex fires SessionStart on resume and again on the auto-compaction right after
    it, and its next request carries both outputs: the second, identical one is left out
    until a prompt has gone by. Claude Code's compaction drops the earlier pack, so there
    it is given again."""
    content = "PowerContext prepared untrusted historical context.\nx"
    server = fake_server(
        {
            "/v1/context/session": Reply(200, prepared(content)),
            "/v1/context/prepare": Reply(200, prepared(None)),
            "/v1/sources/content": Reply(202, {}),
        }
    )
    resumed, _ = run("codex", server.url, tmp_path, session_payload("codex", "/", "resume"))
    assert json.loads(resumed.stdout)["hookSpecificOutput"]["additionalContext"] == content
    compacted, _ = run("codex", server.url, tmp_path, session_payload("codex", "/", "compact"))
    assert compacted.stdout == b""
    assert diagnostic(compacted)["outcome"] == "skipped"
    # A prompt goes by: the next compaction's pack is needed again.
    prompt = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session_payload("codex", "/")["session_id"],
        "turn_id": "t1",
        "cwd": "/",
        "prompt": "hello",
    }
    home = tmp_path / "home"
    subprocess.run(
        [sys.executable, "-S", str(HOOKS_DIR / "codex_user_prompt_submit.py")],
        input=json.dumps(prompt).encode(),
        capture_output=True,
        env=hook_env(home, POWERCONTEXT_URL=server.url, POWERCONTEXT_SCOPE_ID=SCOPE),
        timeout=15,
        check=True,
    )
    again, _ = run("codex", server.url, tmp_path, session_payload("codex", "/", "compact"))
    assert json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"] == content
    # Claude Code: the pack again after its compaction.
    for source in ("resume", "compact"):
        done, _ = run("claude", server.url, tmp_path, session_payload("claude", "/", source))
        assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == content
