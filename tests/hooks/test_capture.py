"""Prompt capture: idempotent source ids, deterministic metadata, independent of recall."""

import hashlib
import json

import pytest

from .conftest import Reply, accepted, claude_payload, codex_payload, prepared

PREPARE = "/v1/context/prepare"
SOURCES = "/v1/sources/content"
SCOPE = "git:example.com/acme/widgets"
PACK = "BEGIN\nremembered\nEND"


def ok_routes():
    return {PREPARE: Reply(200, prepared(PACK)), SOURCES: Reply(202, accepted())}


def expected_source_id(scope, session, turn, prompt):
    canonical = json.dumps(
        ["powercontext.prompt-source.v1", scope, session, turn, prompt], separators=(",", ":")
    )
    return "prompt:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def captured(server):
    return [r.json() for r in server.requests_to(SOURCES)]


def test_codex_prompt_is_captured_with_its_turn(hook, fake_server):
    server = fake_server(ok_routes())
    prompt = "Why does the FTS5 rebuild lock the database? ünïcode 🚀"
    payload = codex_payload(prompt, str(hook.workdir))
    run = hook("codex", server.url, payload=payload, POWERCONTEXT_API_TOKEN="tok")
    assert run.context() == PACK
    [body] = captured(server)
    assert body == {
        "scope_id": SCOPE,
        "source_id": expected_source_id(
            SCOPE, payload["session_id"], "turn_id:" + payload["turn_id"], prompt
        ),
        "content": prompt,
        "metadata": {
            "agent": "codex",
            "event": "UserPromptSubmit",
            "session_id": payload["session_id"],
            "turn_id": payload["turn_id"],
        },
    }
    assert server.requests_to(SOURCES)[0].headers["authorization"] == "Bearer tok"
    assert 1 <= len(body["source_id"]) <= 256


def test_claude_turn_falls_back_to_the_transcript_path(hook, fake_server):
    server = fake_server(ok_routes())
    payload = claude_payload("refactor the analyzer", str(hook.workdir))
    hook("claude", server.url, payload=payload)
    [body] = captured(server)
    turn = "transcript:" + payload["transcript_path"]
    assert body["source_id"] == expected_source_id(
        SCOPE, payload["session_id"], turn, "refactor the analyzer"
    )
    assert body["metadata"] == {
        "agent": "claude",
        "event": "UserPromptSubmit",
        "session_id": payload["session_id"],
    }


def test_claude_prompt_id_is_the_turn_when_sent(hook, fake_server):
    server = fake_server(ok_routes())
    payload = claude_payload("same words", str(hook.workdir), prompt_id="p-1")
    hook("claude", server.url, payload=payload)
    hook("claude", server.url, payload={**payload, "prompt_id": "p-2"})
    first, second = captured(server)
    assert first["source_id"] != second["source_id"]
    assert first["metadata"]["prompt_id"] == "p-1"


def test_retry_of_the_same_turn_sends_the_same_payload(hook, fake_server):
    server = fake_server(ok_routes())
    payload = codex_payload("retry me", str(hook.workdir))
    hook("codex", server.url, payload=payload)
    hook("codex", server.url, payload=payload)
    first, second = server.requests_to(SOURCES)
    assert first.body == second.body


@pytest.mark.parametrize(
    "change",
    [
        {"turn_id": "another-turn"},
        {"session_id": "another-session"},
        {"prompt": "retry me, but differently"},
    ],
)
def test_a_different_turn_session_or_prompt_is_a_different_source(change, hook, fake_server):
    server = fake_server(ok_routes())
    payload = codex_payload("retry me", str(hook.workdir))
    hook("codex", server.url, payload=payload)
    hook("codex", server.url, payload={**payload, **change})
    first, second = captured(server)
    assert first["source_id"] != second["source_id"]


def test_a_different_scope_is_a_different_source(hook, fake_server):
    server = fake_server(ok_routes())
    payload = codex_payload("retry me", str(hook.workdir))
    hook("codex", server.url, payload=payload)
    hook("codex", server.url, payload=payload, POWERCONTEXT_SCOPE_ID="git:example.com/other")
    first, second = captured(server)
    assert first["source_id"] != second["source_id"]
    assert second["scope_id"] == "git:example.com/other"


def test_prompt_at_the_limit_is_captured_whole(hook, fake_server):
    server = fake_server(ok_routes())
    prompt = "a" * 199_999 + "é"
    hook("codex", server.url, prompt=prompt)
    [body] = captured(server)
    assert body["content"] == prompt
    assert server.requests_to(PREPARE)[0].json()["query"] == prompt[:8192]


def test_prompt_over_the_limit_is_not_captured_but_still_recalled(hook, fake_server):
    server = fake_server(ok_routes())
    run = hook("codex", server.url, prompt="a" * 200_001)
    assert run.context() == PACK
    assert server.paths() == [PREPARE]


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_capture_can_be_switched_off(value, hook, fake_server):
    server = fake_server(ok_routes())
    run = hook("codex", server.url, POWERCONTEXT_CAPTURE=value)
    assert run.context() == PACK
    assert server.paths() == [PREPARE]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {"error": {"code": "internal_error", "message": "x", "details": None}}),
        Reply(409, {"error": {"code": "source_conflict", "message": "x", "details": None}}),
        Reply(401, {"error": {"code": "unauthorized", "message": "x", "details": None}}),
        Reply(302, headers={"Location": "http://example.com/"}),
        Reply(202, b"not json"),
    ],
    ids=["500", "409", "401", "redirect", "garbage"],
)
def test_capture_failure_never_affects_recall(reply, hook, fake_server):
    server = fake_server({PREPARE: Reply(200, prepared(PACK)), SOURCES: reply})
    run = hook("codex", server.url)
    assert run.context() == PACK
    assert run.stderr == b""


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500),
        Reply(404),
        Reply(200, b"{oops"),
        Reply(200, prepared(PACK), hang=True),
    ],
    ids=["500", "404", "garbage", "hang"],
)
def test_recall_failure_never_stops_capture(reply, hook, fake_server):
    server = fake_server({PREPARE: reply, SOURCES: Reply(202, accepted())})
    run = hook("codex", server.url, POWERCONTEXT_HOOK_TIMEOUT_MS="600")
    assert run.stdout == b""
    assert len(captured(server)) == 1


def test_capture_is_sent_when_both_are_slow_in_parallel(hook, fake_server):
    # Concurrent calls: two 600 ms answers take about 0.6 s together; one after the
    # other they would take 1.2 s.
    server = fake_server(
        {
            PREPARE: Reply(200, prepared(PACK), delay=0.6),
            SOURCES: Reply(202, accepted(), delay=0.6),
        }
    )
    run = hook("codex", server.url)
    assert run.context() == PACK
    assert len(captured(server)) == 1
    assert run.elapsed < 1.0


def test_private_spans_leave_the_hook_neither_in_the_capture_nor_in_the_query(hook, fake_server):
    server = fake_server(ok_routes())
    prompt = "Fix the importer.<private>my card is 4111 1111 1111 1111</private> Thanks"
    run = hook("codex", server.url, payload=codex_payload(prompt, str(hook.workdir)))
    assert run.context() == PACK
    [body] = captured(server)
    [query] = [r.json() for r in server.requests_to(PREPARE)]
    assert body["content"] == query["query"] == "Fix the importer. Thanks"
    assert "4111" not in json.dumps([body, query])


def test_a_prompt_that_is_all_private_makes_no_call(hook, fake_server):
    server = fake_server(ok_routes())
    prompt = "<PRIVATE>\nthe whole prompt, unclosed"
    run = hook("claude", server.url, payload=claude_payload(prompt, str(hook.workdir)))
    assert run.stdout == b""
    assert run.diagnostic()["outcome"] == "skipped"
    assert server.requests_to(SOURCES) == []
    assert server.requests_to(PREPARE) == []
