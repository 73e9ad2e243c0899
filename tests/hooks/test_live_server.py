"""The hook against a real PowerContext server process (``manage.py serve``).

Starts the server on a free loopback port with its own POWERCONTEXT_HOME, seeds Memory
through the HTTP API, and checks that what the hook injects is byte for byte what the
server prepared.
"""

import json

from .conftest import LIVE_TOKEN as TOKEN
from .conftest import claude_payload, codex_payload, hook_env, run_hook
from .conftest import live_post as post

SCOPE = "git:example.com/acme/live-widgets"


def live_hook_env(tmp_path, server, scope):
    """The hook's environment against the live server, in a home of its own."""
    home = tmp_path / "home"
    home.mkdir()
    return hook_env(
        home, POWERCONTEXT_URL=server, POWERCONTEXT_API_TOKEN=TOKEN, POWERCONTEXT_SCOPE_ID=scope
    )


def test_ready_injection_is_byte_for_byte_against_live_server(powercontext_server, tmp_path):
    memories = [
        (
            "convention",
            "Run the OceanBase migrations with `manage.py migrate` after seekdb starts.",
        ),
        ("gotcha", "FTS5 has no unary NOT: never build MATCH syntax from user text. 数据库 🚀"),
        ("convention", 'Quote "scope_id" values exactly; a NUL \x00 stays data.\nSecond line.'),
    ]
    for kind, text in memories:
        status, _ = post(
            powercontext_server,
            "/v1/memory/remember",
            {
                "scope_id": SCOPE,
                "kind": kind,
                "text": text,
            },
        )
        assert status in (200, 201)
    prompt = "How do I run the OceanBase migrations, and what about FTS5 MATCH syntax?"
    status, expected = post(
        powercontext_server,
        "/v1/context/prepare",
        {
            "scope_id": SCOPE,
            "query": prompt,
            "max_bytes": 8000,
        },
    )
    assert status == 200
    assert expected["status"] == "ready", expected

    env = live_hook_env(tmp_path, powercontext_server, SCOPE)
    for agent, make in (("codex", codex_payload), ("claude", claude_payload)):
        run = run_hook(agent, make(prompt, str(tmp_path)), env)
        assert run.returncode == 0
        assert run.stderr == b"", run.stderr
        injected = run.context()
        assert injected.encode("utf-8") == expected["content"].encode("utf-8")
        assert len(injected.encode("utf-8")) == expected["content_bytes"] <= 8000

    # The same turn again: capture is idempotent, recall unchanged.
    again = run_hook("codex", codex_payload(prompt, str(tmp_path)), env)
    assert again.stderr == b""
    assert again.context() == expected["content"]


def test_live_empty_scope_and_wrong_token_fail_open(powercontext_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    base = {
        "POWERCONTEXT_URL": powercontext_server,
        "POWERCONTEXT_SCOPE_ID": "git:example.com/nothing",
    }
    run = run_hook(
        "codex",
        codex_payload("anything at all", str(tmp_path)),
        hook_env(home, POWERCONTEXT_API_TOKEN=TOKEN, **base),
    )
    assert run.stdout == b""
    assert run.diagnostic()["outcome"] == "empty"
    run = run_hook(
        "claude",
        claude_payload("anything", str(tmp_path)),
        hook_env(home, POWERCONTEXT_API_TOKEN="not-the-token", **base),
    )
    assert run.stdout == b""
    assert run.diagnostic()["outcome"] == "authentication_failed"
    assert run.diagnostic()["http_status"] == 401


def test_the_hooks_own_captures_teach_recall_the_users_instructions(powercontext_server, tmp_path):
    # The hook captures every prompt; after a few prompts in the same style, the style's
    # words ("run the full test suite", "review the diff") no longer pull in the entries
    # that share them, and the question's own memory is the whole pack.
    scope = "git:example.com/acme/live-history"
    template = (
        "Read the notes from our earlier sessions first. {question}\n\nThen run the full "
        "test suite, review the diff yourself and leave the branch uncommitted."
    )
    boilerplate = [
        "Read the notes from earlier sessions before you change anything.",
        "Run the full test suite before you report back.",
        "Review the diff yourself and leave the branch uncommitted.",
    ]
    for text in boilerplate:
        post(
            powercontext_server,
            "/v1/memory/remember",
            {"scope_id": scope, "kind": "note", "text": text},
        )
    _, target = post(
        powercontext_server,
        "/v1/memory/remember",
        {
            "scope_id": scope,
            "kind": "note",
            "text": "Staging deploys need the VPN profile named orca.",
        },
    )
    prompt = template.format(question="Does orca explain why the staging deploy hangs?")

    def cited(content):
        body = content.split("BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n", 1)[1]
        items = json.loads(body.rsplit("\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1", 1)[0])["items"]
        return [item["citation"]["entry_id"] for item in items]

    _, cold = post(powercontext_server, "/v1/context/prepare", {"scope_id": scope, "query": prompt})
    assert len(cited(cold["content"])) == 1 + len(boilerplate)

    env = live_hook_env(tmp_path, powercontext_server, scope)
    questions = [
        "Who owns the billing dashboard?",
        "Where does the exporter write CSV files?",
        "Which port does the sidecar use?",
        "When was Kafka upgraded?",
        "What broke the importer?",
    ]
    for turn, question in enumerate(questions):
        payload = codex_payload(template.format(question=question), str(tmp_path))
        run = run_hook("codex", dict(payload, turn_id=f"turn-{turn}"), env)
        assert run.returncode == 0

    run = run_hook("codex", dict(codex_payload(prompt, str(tmp_path)), turn_id="turn-x"), env)
    assert cited(run.context()) == [target["entry"]["citation"]["entry_id"]]
