"""The plugins inside Gemini CLI, GitHub Copilot CLI and OpenCode, installed from npm at
pinned versions (``scripts/install_agent_clis``), each in a fresh home, pointed at a fake
model endpoint on 127.0.0.1 (``fake_model.py``) and at a live PowerContext server on a port
other than 8000, with and without a token: the siblings of ``test_real_agents.py``.

Each test installs the agent's plugin as README.md's step 1 says, runs the doctor line of
step 2, then one non-interactive turn whose prompt asks to remember, and checks that the
prompt's Context Pack and the session's pack are in the model request byte for byte as
the server answers them, that the PowerContext MCP tools are offered, and that the
model's ``remember_memory`` then ``search_memory`` calls work.

Slow. Without node or npm it skips, saying why; under CI (``CI=true``) it fails instead.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO_ROOT
from .fake_model import FakeModel
from .test_real_agents import (
    PROMPT,
    agent_env,
    check_tool_calls,
    expected_packs,
    install_as_readme_says,
    make_clone,
    make_project,
    run,
    seed,
    setup,  # noqa: F401 (a fixture)
    steps,
)

pytestmark = pytest.mark.slow

GEMINI_VERSION = os.environ.get("GEMINI_CLI_VERSION", "0.61.0")
COPILOT_VERSION = os.environ.get("COPILOT_CLI_VERSION", "1.0.102")
OPENCODE_VERSION = os.environ.get("OPENCODE_VERSION", "1.18.33")


@pytest.fixture(scope="session")
def clis():
    """The directory holding the pinned CLIs (installed if missing)."""
    if not shutil.which("node") or not shutil.which("npm"):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must have node and npm: the real-agent tests need them")
        pytest.skip("node and npm are needed to install the agent CLIs from npm")
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "install_agent_clis")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    bin_dir = Path(done.stdout.strip().splitlines()[-1])
    for name, version in (
        ("gemini", GEMINI_VERSION),
        ("copilot", COPILOT_VERSION),
        ("opencode", OPENCODE_VERSION),
    ):
        shown = subprocess.run(
            [str(bin_dir / name), "--version"],
            capture_output=True,
            text=True,
            check=False,
            env=dict(os.environ, HOME=str(bin_dir.parent.parent / ".home")),
        )
        assert version in shown.stdout, (name, shown.stdout, shown.stderr)
    return bin_dir


def pack_in(text: str, pack: str) -> bool:
    """``pack``, byte for byte, in a request body ``text`` (JSON, non-ASCII kept)."""
    return json.dumps(pack, ensure_ascii=False)[1:-1] in text


def gemini_settings(home: Path) -> None:
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def test_gemini_cli(setup, tmp_path, clis):  # noqa: F811
    with_token, server, token = setup
    clone = make_clone(tmp_path)
    project, scope = make_project(tmp_path, f"widgets-gemini-{'t' if with_token else 'o'}")
    seed(server, scope, token)
    text = f"We run the tests with make check, never pytest alone ({scope})."
    model = FakeModel(steps(scope, text)).start()
    try:
        env = agent_env(
            tmp_path,
            clis,
            server,
            token,
            GOOGLE_GEMINI_BASE_URL=model.url,
            GEMINI_API_KEY="fake-key",
        )
        gemini_settings(Path(env["HOME"]))
        install_as_readme_says("gemini", clone, project, env, token)
        pack, session_pack = expected_packs(server, scope, token)
        done = run(
            ["gemini", "-p", PROMPT, "--yolo", "--output-format", "json"],
            env=env,
            cwd=project,
        )
    finally:
        model.stop()
    assert json.loads(done.stdout)["response"].strip() == "Done: remembered and found it."
    main = [r for r in model.requests if r.body.get("tools")]
    assert main, [r.path for r in model.requests]
    first = main[0].text()
    assert pack_in(first, pack), "the prompt's pack, byte for byte"
    assert pack_in(first, session_pack), "the session's pack, byte for byte"
    tools = {
        d["name"] for r in main for t in r.body["tools"] for d in t.get("functionDeclarations", [])
    }
    assert any(n.endswith("remember_memory") for n in tools), tools
    assert any(n.endswith("search_memory") for n in tools), tools
    check_tool_calls(model, server, scope, token, text)


def test_copilot_cli(setup, tmp_path, clis):  # noqa: F811
    with_token, server, token = setup
    clone = make_clone(tmp_path)
    project, scope = make_project(tmp_path, f"widgets-copilot-{'t' if with_token else 'o'}")
    seed(server, scope, token)
    text = f"We run the tests with make check, never pytest alone ({scope})."
    model = FakeModel(steps(scope, text)).start()
    try:
        env = agent_env(
            tmp_path,
            clis,
            server,
            token,
            # Copilot CLI's own offline mode with a model provider of one's own (BYOK):
            # `copilot help environment`.
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=model.url + "/v1",
            COPILOT_PROVIDER_TYPE="openai",
            COPILOT_PROVIDER_API_KEY="fake-key",
            COPILOT_MODEL="gpt-4.1",
            COPILOT_AUTO_UPDATE="false",
        )
        install_as_readme_says("copilot", clone, project, env, token)
        pack, session_pack = expected_packs(server, scope, token)
        done = run(
            ["copilot", "-p", PROMPT, "--allow-all-tools", "--silent", "--trust-folder"],
            env=env,
            cwd=project,
        )
    finally:
        model.stop()
    assert "Done: remembered and found it." in done.stdout
    main = [r for r in model.requests if r.body.get("tools")]
    assert main, [r.path for r in model.requests]
    # Copilot runs the sessionStart hook beside the first prompt's userPromptSubmitted hook
    # (`copilot -p` hands it the prompt as initialPrompt) and builds the user message as
    # soon as the prompt's hook ends, so the prompt's hook brings the session pack on a
    # session's first prompt and the session hook gives nothing (plugins/README.md). The
    # first request, and every later one of the turn (the same history), carries each
    # pack exactly once, byte for byte.
    events = copilot_events(Path(env["HOME"]))
    for request in main:
        assert pack_count(request.text(), pack) == 1, "the prompt's pack, once, byte for byte"
        assert pack_count(request.text(), session_pack) == 1, "the session's pack, once"
    ended = {hook_type(e): e["data"] for e in events if e["type"] == "hook.end"}
    assert not (ended["sessionStart"].get("output") or {}).get("additionalContext"), ended
    assert session_pack in ended["userPromptSubmitted"]["output"]["additionalContext"]
    tools = {(t.get("function") or {}).get("name", "") for r in main for t in r.body["tools"]}
    assert any(n.endswith("remember_memory") for n in tools), sorted(tools)
    assert any(n.endswith("search_memory") for n in tools), tools
    check_tool_calls(model, server, scope, token, text)
    # The server refuses MCP 2026-07-28's subscriptions/listen at once (it held a worker
    # thread for good, and Copilot waited 10 s for it before listing the tools).
    logs = "".join(
        path.read_text(errors="replace")
        for path in (Path(env["HOME"]) / ".copilot" / "logs").glob("*.log")
    )
    assert "MCP request timed out" not in logs


def pack_count(text: str, pack: str) -> int:
    """How many times ``pack``, byte for byte, is in a request body ``text``."""
    return text.count(json.dumps(pack, ensure_ascii=False)[1:-1])


def copilot_events(home: Path) -> list[dict]:
    """The events Copilot CLI recorded for the one session run in ``home``."""
    (path,) = (home / ".copilot" / "session-state").glob("*/events.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hook_type(event: dict) -> str | None:
    return (event.get("data") or {}).get("hookType")


def opencode_config(home: Path, model_url: str, clis: Path) -> None:
    """A provider of OpenAI-compatible chat at the fake endpoint (``options.baseURL``)."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "fake model",
                "options": {"baseURL": model_url + "/v1", "apiKey": "fake-key"},
                "models": {"fake-model": {"name": "fake model", "tool_call": True}},
            }
        },
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"*": "allow"},
    }
    directory = home / ".config" / "opencode"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "opencode.json").write_text(json.dumps(config))
    # OpenCode installs its plugin SDK into its config directory from npm when it is not
    # there (a minute on a loaded machine): install_agent_clis keeps one to link to.
    sdk = clis.parent.parent / "opencode-config"
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(sdk / name, directory / name)
    (directory / "node_modules").symlink_to(sdk / "node_modules")


def test_opencode(setup, tmp_path, clis):  # noqa: F811
    with_token, server, token = setup
    clone = make_clone(tmp_path)
    project, scope = make_project(tmp_path, f"widgets-opencode-{'t' if with_token else 'o'}")
    seed(server, scope, token)
    text = f"We run the tests with make check, never pytest alone ({scope})."
    model = FakeModel(steps(scope, text)).start()
    try:
        env = agent_env(
            tmp_path,
            clis,
            server,
            token,
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        )
        opencode_config(Path(env["HOME"]), model.url, clis)
        install_as_readme_says("opencode", clone, project, env, token)
        pack, session_pack = expected_packs(server, scope, token)
        done = run(["opencode", "run", PROMPT], env=env, cwd=project)
    finally:
        model.stop()
    assert "Done: remembered and found it." in done.stdout
    main = [r for r in model.requests if r.body.get("tools")]
    assert main, [r.path for r in model.requests]
    first = main[0].text()
    assert pack_in(first, pack), "the prompt's pack, byte for byte"
    assert pack_in(first, session_pack), "the session's pack, byte for byte"
    tools = {(t.get("function") or {}).get("name", "") for r in main for t in r.body["tools"]}
    assert any(n.endswith("remember_memory") for n in tools), tools
    assert any(n.endswith("search_memory") for n in tools), tools
    check_tool_calls(model, server, scope, token, text)
