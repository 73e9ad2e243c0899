"""OpenCode's plugin (plugins/opencode/powercontext.js) run by node, without the OpenCode
CLI: its ``chat.message`` and ``event`` handlers called as OpenCode calls them, the hook
scripts they start talking to a fake server. What the real CLI adds (that the parts reach
the model's request) is test_real_agents_more.py's part.

Without node these tests skip, saying why; under CI (``CI=true``) they fail instead.
"""

import json
import os
import shutil
import subprocess
import time

import pytest

from .conftest import REPO_ROOT, Recorded, Reply, hook_env, prepared

PLUGIN = REPO_ROOT / "plugins" / "opencode" / "powercontext.js"
SESSION_PACK = "PowerContext session pack.\n\u2028 \u00e9 s"
PROMPT_PACK = "PowerContext prompt pack.\n\u2028 \u00e9 p"

# Calls the handlers as OpenCode does: one chat.message per step (a user message of one
# text part, which the handler may add synthetic parts to), or an event; prints the texts
# of the synthetic parts each message ended up with.
DRIVER = """
import { pathToFileURL } from "node:url";
const [plugin, steps] = process.argv.slice(2);
const { PowerContext } = await import(pathToFileURL(plugin).href);
const hooks = await PowerContext({ directory: process.cwd() });
const results = [];
for (const step of JSON.parse(steps)) {
  if (step.event) {
    await hooks.event({ event: step.event });
    continue;
  }
  const messageID = "msg_" + results.length;
  const parts = [
    { id: "prt_" + results.length, sessionID: step.session, messageID, type: "text",
      text: step.prompt },
  ];
  await hooks["chat.message"]({ sessionID: step.session }, { message: { id: messageID }, parts });
  results.push(parts.filter((part) => part.synthetic).map((part) => part.text));
}
process.stdout.write(JSON.stringify(results));
"""


@pytest.fixture
def node():
    found = shutil.which("node")
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must have node: the OpenCode plugin's tests need it")
        pytest.skip("node is needed to run the OpenCode plugin")
    return found


def run_plugin(node: str, tmp_path, url: str, steps: list[dict], **env: str) -> list[list[str]]:
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER, encoding="utf-8")
    done = subprocess.run(
        [node, str(driver), str(PLUGIN), json.dumps(steps)],
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(tmp_path, POWERCONTEXT_URL=url, POWERCONTEXT_SCOPE_ID="s", **env),
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


def routes(session_delay: float = 0.0):
    """The fake server's routes, and when each session pack was answered and each prompt
    captured."""
    answered: list[float] = []
    captured: list[float] = []

    def session_answer(_request: Recorded) -> Reply:
        time.sleep(session_delay)
        answered.append(time.monotonic())
        return Reply(200, prepared(SESSION_PACK))

    def capture(_request: Recorded) -> Reply:
        captured.append(time.monotonic())
        return Reply(202, {"source_id": "x", "position": 1})

    table = {
        "/v1/context/session": session_answer,
        "/v1/context/prepare": Reply(200, prepared(PROMPT_PACK)),
        "/v1/sources/content": capture,
    }
    return table, answered, captured


@pytest.mark.slow
def test_a_sessions_first_message_is_captured_after_its_session_pack_is_chosen(
    node, tmp_path, fake_server
):
    """The session pack picks entries by the scope's recent prompts: the first prompt is
    captured once the session's pack has been chosen, so that pack is the same however
    the two calls race (run side by side, the real CLI's test saw the pack differ). The
    two texts come in a session's order, each byte for byte."""
    table, answered, captured = routes(session_delay=0.5)
    server = fake_server(table)
    (first,) = run_plugin(node, tmp_path, server.url, [{"session": "s1", "prompt": "Run tests?"}])
    assert first == [SESSION_PACK, PROMPT_PACK]
    assert len(answered) == len(captured) == 1
    assert answered[0] < captured[0]


@pytest.mark.slow
def test_a_compaction_brings_the_session_pack_again(node, tmp_path, fake_server):
    table, _, _ = routes()
    server = fake_server(table)
    compacted = {"type": "session.compacted", "properties": {"sessionID": "s1"}}
    other = {"type": "session.compacted", "properties": {"sessionID": "s2"}}
    steps = [
        {"session": "s1", "prompt": "one"},
        {"session": "s1", "prompt": "two"},
        {"event": other},
        {"session": "s1", "prompt": "three"},
        {"event": compacted},
        {"session": "s1", "prompt": "four"},
        {"session": "s1", "prompt": "five"},
    ]
    results = run_plugin(node, tmp_path, server.url, steps)
    assert results == [
        [SESSION_PACK, PROMPT_PACK],
        [PROMPT_PACK],
        [PROMPT_PACK],
        [SESSION_PACK, PROMPT_PACK],
        [PROMPT_PACK],
    ]
    assert len(server.requests_to("/v1/context/session")) == 2


@pytest.mark.slow
def test_a_slow_session_pack_leaves_the_first_message_the_rest_of_one_budget(
    node, tmp_path, fake_server
):
    """The session's call and the prompt's share one budget (here the hook's longest,
    4 s): a server slow to choose the session's pack holds the session's call for half of
    it, and the prompt's pack still comes, asked for well before a second whole budget
    (two calls one after the other, each with its own, asked for it after 4 s)."""
    arrived: dict[str, float] = {}

    def slow_session(_request: Recorded) -> Reply:
        arrived["session"] = time.monotonic()
        time.sleep(6)
        return Reply(200, prepared(SESSION_PACK))

    def prompt_answer(_request: Recorded) -> Reply:
        arrived["prepare"] = time.monotonic()
        return Reply(200, prepared(PROMPT_PACK))

    server = fake_server(
        {
            "/v1/context/session": slow_session,
            "/v1/context/prepare": prompt_answer,
            "/v1/sources/content": Reply(202, {"source_id": "x", "position": 1}),
        }
    )
    steps = [{"session": "s1", "prompt": "Run tests?"}]
    (first,) = run_plugin(node, tmp_path, server.url, steps, POWERCONTEXT_HOOK_TIMEOUT_MS="4000")
    assert first == [PROMPT_PACK]
    assert arrived["prepare"] - arrived["session"] < 3.2
