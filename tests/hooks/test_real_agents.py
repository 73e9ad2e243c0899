"""The plugins inside the real agents: Claude Code and Codex, installed from npm at pinned
versions (``scripts/install_agent_clis``), each in a fresh home, pointed at a fake model
endpoint on 127.0.0.1 (``fake_model.py``) and at a live PowerContext server on a port
other than 8000, with and without a token.

For each CLI the test follows README.md's "Getting started" literally: step 1's install
lines and step 2's doctor line are read from the README and run as written (with the
clone's path and the project's), then one non-interactive turn whose prompt asks to
remember, and it checks that

- the hook ran and its Context Pack is in the model request, byte for byte what
  ``POST /v1/context/prepare`` answers for that prompt, and so is the SessionStart hook's
  pack, byte for byte what ``POST /v1/context/session`` answers;
- the PowerContext MCP tools are in the request's tool list;
- the model's tool calls (``remember_memory``, then ``search_memory``) work: the memory
  is written and found, and the search result went back to the model.

Slow (a few seconds per turn); skipped, with the reason, only where node or npm is missing,
and failed there under CI (``CI=true``).
"""

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from .conftest import LIVE_TOKEN, REPO_ROOT, mark_for_session_start
from .fake_model import FakeModel, ToolStep, bare_name

pytestmark = pytest.mark.slow

CLAUDE_VERSION = os.environ.get("CLAUDE_CODE_VERSION", "2.1.197")
CODEX_VERSION = os.environ.get("CODEX_VERSION", "0.171.0")
PROMPT = "Remember in PowerContext: we run the tests with make check, never pytest alone."
# What the prompt below is about, so the pack answers it: a pack holds only what the
# evidence supports (docs/relevance.md), and an entry sharing two words would not do.
SEEDED = "Run the tests with make check before pushing; CI runs the same target."
STANDING = "Start the dev server with `make serve`; it reloads on change."
CLAUDE_TOOLS = "mcp__plugin_powercontext_powercontext__"


@pytest.fixture(scope="session")
def clis():
    """The directory holding the pinned ``claude`` and ``codex`` (installed if missing)."""
    if not shutil.which("node") or not shutil.which("npm"):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must have node and npm: the real-agent tests need them")
        pytest.skip("node and npm are needed to install Claude Code and Codex from npm")
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "install_agent_clis")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    bin_dir = Path(done.stdout.strip().splitlines()[-1])
    for name, version in (("claude", CLAUDE_VERSION), ("codex", CODEX_VERSION)):
        shown = subprocess.run(
            [str(bin_dir / name), "--version"], capture_output=True, text=True, check=False
        )
        assert version in shown.stdout, (name, shown.stdout, shown.stderr)
    return bin_dir


def readme_step(number: int) -> list[str]:
    """The shell lines of README.md's "Getting started" step ``number``."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    step = text.split(f"\n{number}. **", 1)[1].split(f"\n{number + 1}. **", 1)[0]
    block = step.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def make_clone(tmp_path: Path) -> Path:
    """What a user has after cloning: the marketplaces, the plugins and hooks/."""
    clone = tmp_path / "powercontext"
    clone.mkdir()
    for part in (".claude-plugin", ".agents", "plugins", "hooks"):
        shutil.copytree(
            REPO_ROOT / part, clone / part, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copyfile(REPO_ROOT / "README.md", clone / "README.md")
    return clone


def make_project(tmp_path: Path, name: str) -> tuple[Path, str]:
    project = tmp_path / "widgets"
    project.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for args in (
        ["init", "-q"],
        ["remote", "add", "origin", f"https://example.com/acme/{name}.git"],
    ):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=env)
    return project, f"git:example.com/acme/{name}"


def api(base: str, path: str, body: dict, token: str | None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def run(args, *, env, cwd, timeout=180):
    """Run ``args`` (a list, or a README line for bash) and insist it succeeds."""
    if isinstance(args, str):
        args = ["/bin/bash", "-c", args]
    done = subprocess.run(
        args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done


def agent_env(tmp_path: Path, clis: Path, server: str, token: str | None, **extra) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": f"{clis}:{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        "POWERCONTEXT_URL": server,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # The hook's largest budget: on a loaded machine (CI runs the suite on 2 cores) a
        # 1.5 s budget can run out before the server answers, and the test is about the
        # pack reaching the model, not about the budget (tests/hooks/test_recall.py).
        "POWERCONTEXT_HOOK_TIMEOUT_MS": "4000",
        **extra,
    }
    if token:
        env["POWERCONTEXT_API_TOKEN"] = token
    return env


@pytest.fixture(params=[True, False], ids=["token", "no-token"])
def setup(request, tmp_path, clis):
    with_token = request.param
    server = request.getfixturevalue(
        "powercontext_server" if with_token else "powercontext_server_without_token"
    )
    assert not server.endswith(":8000")
    token = LIVE_TOKEN if with_token else None
    return with_token, server, token


def install_as_readme_says(agent: str, clone: Path, project: Path, env: dict, token):
    """README.md steps 1 and 2, this agent's lines, as written (paths filled in)."""
    for line in readme_step(1):
        if not line.startswith(agent + " "):
            continue
        if token and line.startswith("codex mcp add"):
            line += " --bearer-token-env-var POWERCONTEXT_API_TOKEN"  # as the README says
        if token and line.startswith("copilot mcp add"):
            line += " --header 'Authorization: Bearer ${POWERCONTEXT_API_TOKEN}'"  # likewise
        run(line, env=env, cwd=clone)
    for line in readme_step(2):
        if f"--agent {agent}" not in line:
            continue
        line = line.replace("/path/to/powercontext", str(clone)).replace(
            "~/src/widgets", str(project)
        )
        done = run(line, env=env, cwd=project)
        assert done.stdout.rstrip().endswith("All good."), done.stdout


def seed(server: str, scope: str, token) -> None:
    for kind, text in (("ops", SEEDED), ("command", STANDING)):
        api(server, "/v1/memory/remember", {"scope_id": scope, "kind": kind, "text": text}, token)
    # Only what a reviewer marked opens every session (issue 38).
    mark_for_session_start(server, scope, STANDING)


def expected_packs(server: str, scope: str, token) -> tuple[str, str]:
    """(prepare's pack for the prompt, the session's pack), before the turn changes them."""
    prepared = api(
        server,
        "/v1/context/prepare",
        {"scope_id": scope, "query": PROMPT, "max_bytes": 8000},
        token,
    )
    started = api(server, "/v1/context/session", {"scope_id": scope}, token)
    assert prepared["status"] == started["status"] == "ready", (prepared, started)
    assert STANDING in started["content"]
    return prepared["content"], started["content"]


def check_tool_calls(model: FakeModel, server: str, scope: str, token, remember_text: str):
    names = [bare_name(name) for name, _ in model.calls]
    # What an agent offers besides the tools: Claude Code's WaitForMcpServers while MCP
    # servers connect, and its ToolSearch that loads deferred MCP tools (2.1.332).
    helpers = {"WaitForMcpServers", "ToolSearch"}
    assert [n for n in names if n not in helpers] == ["remember_memory", "search_memory"]
    listed = api(server, "/v1/memory/entries/list", {"scope_id": scope}, token)
    assert remember_text in [entry["text"] for entry in listed["entries"]]
    assert any(remember_text in result for result in model.results), model.results


def steps(scope: str, text: str) -> list[ToolStep]:
    return [
        ToolStep("remember_memory", {"scope_id": scope, "kind": "convention", "text": text}),
        ToolStep("search_memory", {"scope_id": scope, "query": "make check tests"}),
    ]


def test_claude_code(setup, tmp_path, clis):
    with_token, server, token = setup
    clone = make_clone(tmp_path)
    project, scope = make_project(tmp_path, f"widgets-claude-{'t' if with_token else 'o'}")
    seed(server, scope, token)
    text = f"We run the tests with make check, never pytest alone ({scope})."
    model = FakeModel(steps(scope, text)).start()
    try:
        env = agent_env(
            tmp_path, clis, server, token, ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-x"
        )
        install_as_readme_says("claude", clone, project, env, token)
        pack, session_pack = expected_packs(server, scope, token)
        allowed = ",".join(CLAUDE_TOOLS + name for name in ("remember_memory", "search_memory"))
        done = run(
            ["claude", "-p", PROMPT, "--allowedTools", allowed, "--output-format", "json"],
            env=env,
            cwd=project,
        )
    finally:
        model.stop()
    assert json.loads(done.stdout)["result"] == "Done: remembered and found it."
    main = [r for r in model.requests if r.body.get("tools")]
    assert main, [r.path for r in model.requests]
    first = main[0].text()
    # The hook ran: its pack is in the request, byte for byte, after the prompt.
    assert json.dumps(pack, ensure_ascii=False)[1:-1] in first
    assert json.dumps(session_pack, ensure_ascii=False)[1:-1] in first
    assert first.index(json.dumps(PROMPT)[1:-1]) < first.rindex("BEGIN_POWERCONTEXT")
    tools = {t["name"] for r in main for t in r.body["tools"]}
    assert {CLAUDE_TOOLS + "remember_memory", CLAUDE_TOOLS + "search_memory"} <= tools
    check_tool_calls(model, server, scope, token, text)
    # Claude Code ran the clone's copy (a directory marketplace), as the doctor said.
    assert list((clone / "plugins" / "claude" / "scripts" / "__pycache__").glob("*.pyc"))


CODEX_CONFIG = """model = "gpt-5.1-codex"
model_provider = "fake"

[model_providers.fake]
name = "fake model"
base_url = "{url}/v1"
wire_api = "responses"
"""


def test_codex(setup, tmp_path, clis):
    with_token, server, token = setup
    clone = make_clone(tmp_path)
    project, scope = make_project(tmp_path, f"widgets-codex-{'t' if with_token else 'o'}")
    seed(server, scope, token)
    text = f"We run the tests with make check, never pytest alone ({scope})."
    model = FakeModel(steps(scope, text)).start()
    try:
        env = agent_env(tmp_path, clis, server, token)
        codex_home = Path(env["HOME"]) / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=model.url))
        install_as_readme_says("codex", clone, project, env, token)
        pack, session_pack = expected_packs(server, scope, token)
        # No --dangerously-bypass-hook-trust: the doctor's --trust-codex-hook (step 2) did it.
        done = run(["codex", "exec", PROMPT], env=env, cwd=project)
    finally:
        model.stop()
    assert "Done: remembered and found it." in done.stdout
    main = [r for r in model.requests if r.path.endswith("/responses")]
    first = main[0]
    developer = [
        part["text"]
        for item in first.body["input"]
        if item.get("type") == "message" and item.get("role") == "developer"
        for part in item["content"]
        if part.get("type") == "input_text"
    ]
    assert pack in developer, "the pack is a developer message, byte for byte"
    assert session_pack in developer, "so is the session's pack"
    namespaces = [t for t in first.body["tools"] if t.get("name") == "mcp__powercontext"]
    assert namespaces, [t.get("name") for t in first.body["tools"]]
    tools = {t["name"] for t in namespaces[0]["tools"]}
    assert {"remember_memory", "search_memory"} <= tools
    check_tool_calls(model, server, scope, token, text)
    assert not re.search(r"rmcp.*error", done.stderr, re.IGNORECASE), done.stderr[-2000:]
