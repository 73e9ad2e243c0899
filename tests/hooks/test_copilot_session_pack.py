"""Copilot CLI's session pack reaches the session's first model request exactly once.

Copilot CLI starts the sessionStart hook and, when the first prompt is on its command
line (``copilot -p``), that prompt's userPromptSubmitted hook 0.2 s later, side by side;
it builds the user message as soon as the prompt's hook answers, so a session pack that
comes later is lost for the turn. The prompt hook therefore carries the session pack on
a session's first prompt, and one marker per session (O_CREAT|O_EXCL) keeps the two
concurrent processes from both giving it. These run the real entry scripts.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from .conftest import HOOKS_DIR, Reply, hook_env, load_hook_module, prepared

SESSION_PACK = "PowerContext session pack.\n\u2028 \u00e9 session"
PROMPT_PACK = "PowerContext prepared untrusted historical context.\n\u00e9 prompt"
PROMPT = "How do I run the tests?"
PROMPT_SCRIPT = HOOKS_DIR / "copilot_user_prompt_submitted.py"
SESSION_SCRIPT = HOOKS_DIR / "copilot_session_start.py"
COMPACT_SCRIPT = HOOKS_DIR / "copilot_pre_compact.py"


def prompt_event(session_id: str, prompt: str = PROMPT) -> dict:
    """What Copilot CLI 1.0.102 sends the userPromptSubmitted hook (recorded)."""
    return {"sessionId": session_id, "timestamp": 1796328453674, "cwd": "/", "prompt": prompt}


def session_event(session_id: str, source: str = "new", initial: str | None = None) -> dict:
    """What it sends the sessionStart hook; ``initialPrompt`` under ``copilot -p``."""
    event = {"sessionId": session_id, "timestamp": 1796328453446, "cwd": "/", "source": source}
    if initial is not None:
        event["initialPrompt"] = initial
    return event


def compact_event(session_id: str, trigger: str = "auto") -> dict:
    """What it sends the preCompact hook (its hooks reference, camelCase input)."""
    return {
        "sessionId": session_id,
        "timestamp": 1796328499000,
        "cwd": "/",
        "transcriptPath": "/nonexistent/events.jsonl",
        "trigger": trigger,
        "customInstructions": "",
    }


def compact(payload: dict | bytes, tmp_path, url: str) -> None:
    """Run the preCompact hook: exit 0 and nothing on stdout or stderr, whatever it got."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    done = subprocess.run(
        [sys.executable, "-S", str(COMPACT_SCRIPT)],
        input=data,
        capture_output=True,
        env=hook_env(tmp_path, POWERCONTEXT_URL=url, POWERCONTEXT_SCOPE_ID="s"),
        timeout=15,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def start(script, payload: dict, tmp_path, url: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-S", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(tmp_path, POWERCONTEXT_URL=url, POWERCONTEXT_SCOPE_ID="s"),
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload).encode())
    process.stdin.close()
    return process


def finish(process: subprocess.Popen) -> tuple[str | None, bytes]:
    """The ``additionalContext`` the hook gave (None for none) and its stderr."""
    assert process.stdout is not None
    assert process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()  # a few hundred bytes each
    process.wait(timeout=15)
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == 0, err
    assert b"Traceback" not in err
    if not out:
        return None, err
    output = json.loads(out)
    assert set(output) == {"additionalContext"}
    return output["additionalContext"], err


def run(script, payload: dict, tmp_path, url: str) -> tuple[str | None, bytes]:
    return finish(start(script, payload, tmp_path, url))


def packs(context: str | None) -> list[str]:
    """The packs a hook's output carries, in order."""
    if context is None:
        return []
    found = [p for p in (SESSION_PACK, PROMPT_PACK) if p in context]
    assert "\n\n".join(found) == context, context  # nothing else, each whole
    return found


@pytest.fixture
def server(fake_server):
    return fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared(PROMPT_PACK)),
            "/v1/context/session": Reply(200, prepared(SESSION_PACK)),
            "/v1/sources/content": Reply(202, {"source_id": "x", "position": 1}),
        }
    )


def test_copilot_p_the_first_prompt_carries_both_packs_once(tmp_path, server):
    """``copilot -p``: the session hook gives nothing (and asks nothing); the prompt's hook
    gives the session pack and the prompt pack, each whole; the next prompt only its own."""
    session_hook = start(SESSION_SCRIPT, session_event("s1", initial=PROMPT), tmp_path, server.url)
    prompt_hook = start(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    assert packs(finish(session_hook)[0]) == []
    assert packs(finish(prompt_hook)[0]) == [SESSION_PACK, PROMPT_PACK]
    assert len(server.requests_to("/v1/context/session")) == 1
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]
    assert len(server.requests_to("/v1/context/session")) == 1  # not asked again
    # Another session is another first prompt.
    assert packs(run(PROMPT_SCRIPT, prompt_event("s2"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]


@pytest.mark.parametrize("initial", [PROMPT, None], ids=["copilot-p", "interactive"])
def test_two_concurrent_hooks_give_the_session_pack_exactly_once(tmp_path, fake_server, initial):
    """Both hooks at once, the server holding both answers (a loaded machine): exactly one
    gives the session pack. Under ``copilot -p`` it is the prompt's hook, the one Copilot
    waits for; at an interactive start with a quickly typed first prompt, either."""
    server = fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared(PROMPT_PACK), delay=0.4),
            "/v1/context/session": Reply(200, prepared(SESSION_PACK), delay=0.4),
            "/v1/sources/content": Reply(202, {"source_id": "x", "position": 1}),
        }
    )
    for n in range(4):
        session_id = f"race-{n}"
        event = session_event(session_id, initial=initial)
        started = start(SESSION_SCRIPT, event, tmp_path, server.url)
        prompted = start(PROMPT_SCRIPT, prompt_event(session_id), tmp_path, server.url)
        by_session, by_prompt = packs(finish(started)[0]), packs(finish(prompted)[0])
        given = by_session + by_prompt
        assert given.count(SESSION_PACK) == 1, (n, given)
        assert given.count(PROMPT_PACK) == 1, (n, given)
        if initial is not None:
            assert by_prompt == [SESSION_PACK, PROMPT_PACK], n


def test_an_interactive_start_gives_it_and_the_first_prompt_does_not(tmp_path, server):
    assert packs(run(SESSION_SCRIPT, session_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK
    ]
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]


def test_a_down_server_costs_the_budget_and_the_next_prompt_gives_it(
    tmp_path, refused_url, silent_url, server
):
    """Nothing is claimed without the server's answer: the first prompt that reaches it
    gives the session pack. The hook never waits past its budget."""
    context, err = run(SESSION_SCRIPT, session_event("s1"), tmp_path, refused_url)
    assert context is None
    assert json.loads(err)["outcome"] == "server_unavailable"
    began = time.monotonic()
    context, err = run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, silent_url)
    assert time.monotonic() - began < 1.5 + 1.0  # the hook's budget, plus the interpreter
    assert context is None
    outcomes = {json.loads(line)["event"]: json.loads(line)["outcome"] for line in err.splitlines()}
    assert outcomes == {
        "context_session": "server_unavailable",
        "context_prepare": "server_unavailable",
    }
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]


def test_a_resumed_session_gets_it_again_once(tmp_path, server):
    """``copilot --resume <id> -p``: the resumed run's first request has the current pack."""
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]
    resumed = session_event("s1", source="resume", initial=PROMPT)
    assert packs(run(SESSION_SCRIPT, resumed, tmp_path, server.url)[0]) == []
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]


def test_no_session_id_no_marker_the_session_hook_gives_it(tmp_path, server):
    """Without a session to key on, nothing can be de-duplicated: the session hook gives
    the pack as before and the prompt hook never adds it to every prompt."""
    event = {"timestamp": 1, "cwd": "/", "source": "new", "initialPrompt": PROMPT}
    assert packs(run(SESSION_SCRIPT, event, tmp_path, server.url)[0]) == [SESSION_PACK]
    event = {"timestamp": 1, "cwd": "/", "prompt": PROMPT}
    assert packs(run(PROMPT_SCRIPT, event, tmp_path, server.url)[0]) == [PROMPT_PACK]


def test_old_markers_are_swept_at_a_session_start(tmp_path, server):
    hook = load_hook_module()
    directory = tmp_path / f"powercontext-hook-{os.getuid()}"
    directory.mkdir(mode=0o700)
    old, fresh, other = (directory / n for n in ("copilot-old", "copilot-fresh", "session-x"))
    for path in (old, fresh, other):
        path.touch()
    long_ago = time.time() - hook.COPILOT_MARKER_MAX_AGE_S - 60
    for path in (old, other):
        os.utime(path, (long_ago, long_ago))
    run(SESSION_SCRIPT, session_event("s1"), tmp_path, server.url)
    assert not old.exists()
    assert fresh.exists()
    assert other.exists()  # Codex's markers are not Copilot's to sweep


def test_claim_is_exclusive_and_never_follows_a_link(tmp_path):
    hook = load_hook_module()
    marker = str(tmp_path / "copilot-x")
    assert hook.claim_session_pack(marker) is True
    assert hook.claim_session_pack(marker) is False
    assert os.stat(marker).st_mode & 0o777 == 0o600
    planted = tmp_path / "copilot-y"
    planted.symlink_to(tmp_path / "elsewhere")
    assert hook.claim_session_pack(str(planted)) is False
    assert not (tmp_path / "elsewhere").exists()


def test_the_first_prompt_is_captured_after_the_session_pack_is_chosen(tmp_path, fake_server):
    """The session pack picks entries by the scope's recent prompts: the one the first
    prompt's hook brings is the pack the session had before that prompt, not one moved by
    its capture racing beside it."""
    answered: list[float] = []
    captured: list[float] = []

    def session_answer(_request):
        time.sleep(0.3)
        answered.append(time.monotonic())
        return Reply(200, prepared(SESSION_PACK))

    def capture_answer(_request):
        captured.append(time.monotonic())
        return Reply(202, {"source_id": "x", "position": 1})

    server = fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared(PROMPT_PACK)),
            "/v1/context/session": session_answer,
            "/v1/sources/content": capture_answer,
        }
    )
    context, _ = run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    assert packs(context) == [SESSION_PACK, PROMPT_PACK]
    assert len(answered) == len(captured) == 1
    assert captured[0] >= answered[0]


def test_after_a_compaction_the_next_prompt_carries_it_again_once(tmp_path, server):
    """preCompact drops the session's marker, with no call to the server: the next
    prompt brings the session pack again (the compaction took the earlier one), once."""
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]
    asked = len(server.requests)
    for trigger in ("auto", "manual"):
        compact(compact_event("s1", trigger), tmp_path, server.url)
        assert len(server.requests) == asked  # never holds the compaction up on a call
        assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
            SESSION_PACK,
            PROMPT_PACK,
        ]
        assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
            PROMPT_PACK
        ]
        asked = len(server.requests)


def test_a_compaction_without_a_server_still_brings_it_back(tmp_path, silent_url, server):
    """The hook never asks the server, so a silent one costs the compaction nothing."""
    run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    began = time.monotonic()
    compact(compact_event("s1"), tmp_path, silent_url)
    assert time.monotonic() - began < 1.5  # under the budget: nothing waited on
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]


def test_a_compaction_of_another_session_changes_nothing(tmp_path, server):
    run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    compact(compact_event("s2"), tmp_path, server.url)
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]
    # s2 had no pack yet: its first prompt gets it, as any session's does.
    assert packs(run(PROMPT_SCRIPT, prompt_event("s2"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'"s1"',
        b"null",
        {},
        {"timestamp": 1, "cwd": "/", "trigger": "auto"},  # no sessionId
        {**compact_event("s1"), "sessionId": None},
        {**compact_event("s1"), "sessionId": 1},
        {**compact_event("s1"), "sessionId": ["s1"]},
        {**compact_event("s1"), "sessionId": ""},
        {"hook_event_name": "PreCompact", "session_id": "s1", "trigger": "auto"},
        {**compact_event("s1"), "hook_event_name": "UserPromptSubmit"},  # not this event
    ],
    ids=lambda p: p.decode("latin-1") if isinstance(p, bytes) else json.dumps(p)[:40],
)
def test_a_bad_compaction_payload_exits_0_silently_and_changes_nothing(payload, tmp_path, server):
    """Nothing here names a session of this hook's: s1 keeps its marker."""
    run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    compact(payload, tmp_path, server.url)
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [PROMPT_PACK]
    assert server.paths().count("/v1/context/session") == 1


def test_odd_fields_beside_a_session_id_still_bring_it_back(tmp_path, server):
    """Only ``sessionId`` is read: a trigger, cwd or transcript path of another shape (a
    later Copilot) is no reason to keep the pack from the compacted session."""
    run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)
    odd = {"sessionId": "s1", "trigger": 7, "cwd": None, "transcriptPath": {}, "x": [1]}
    compact(odd, tmp_path, server.url)
    assert packs(run(PROMPT_SCRIPT, prompt_event("s1"), tmp_path, server.url)[0]) == [
        SESSION_PACK,
        PROMPT_PACK,
    ]
