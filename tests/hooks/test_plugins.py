"""The Codex and Claude Code plugins: every manifest against the agent's published format,
and each plugin's hook command run exactly as its manifest says, against a live server.

Schemas: tests/hooks/schemas/README.md says which are the agents' own (verbatim) and which
were written here from the agent's source or reference.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from .conftest import REPO_ROOT, claude_payload, codex_payload, hook_env, live_post

SCHEMAS = Path(__file__).parent / "schemas"
PLUGINS = REPO_ROOT / "plugins"
CLAUDE_PLUGIN = PLUGINS / "claude"
CODEX_PLUGIN = PLUGINS / "codex"
SCOPE = "git:example.com/acme/plugin-widgets"


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def validate(document, schema_name: str) -> None:
    schema = load(SCHEMAS / schema_name)
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(document)


# ---------------------------------------------------------------------------- formats


def test_claude_marketplace_and_manifest_match_the_published_schemas():
    marketplace = load(REPO_ROOT / ".claude-plugin" / "marketplace.json")
    validate(marketplace, "claude-code-marketplace.schema.json")
    manifest = load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")
    validate(manifest, "claude-code-plugin-manifest.schema.json")
    (entry,) = marketplace["plugins"]
    assert entry["name"] == manifest["name"]
    # A relative source is resolved against the marketplace root (the repository).
    assert (REPO_ROOT / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    assert set(manifest["hooks"]) == {"UserPromptSubmit", "SessionStart"}
    assert manifest["mcpServers"]["powercontext"]["type"] == "http"


def test_codex_marketplace_manifest_hooks_and_mcp_match_codex_formats():
    marketplace = load(REPO_ROOT / ".agents" / "plugins" / "marketplace.json")
    validate(marketplace, "codex-marketplace.schema.json")
    (entry,) = marketplace["plugins"]
    root = REPO_ROOT / entry["source"]["path"]
    assert root == CODEX_PLUGIN.resolve() or root.resolve() == CODEX_PLUGIN.resolve()
    manifest = load(root / ".codex-plugin" / "plugin.json")
    validate(manifest, "codex-plugin-manifest.schema.json")
    # Codex refuses to install a plugin whose manifest name differs from the entry's.
    assert manifest["name"] == entry["name"]
    hooks = load(root / manifest["hooks"])
    validate(hooks, "codex-hooks-file.schema.json")
    assert set(hooks["hooks"]) == {"UserPromptSubmit", "SessionStart"}
    # No MCP entry: Codex cannot expand a variable in a plugin's MCP URL, so a fixed
    # address would miss any server not on it and cost Codex a failed connection at every
    # start. The MCP server is added with `codex mcp add` at the server's own address.
    assert "mcpServers" not in manifest
    assert not (root / ".mcp.json").exists()


@pytest.mark.parametrize(
    ("document", "schema"),
    [
        ({"name": "powercontext", "hooks": "hooks/hooks.json"}, "codex-plugin-manifest"),
        ({"name": "powercontext", "hooks": "./../hooks.json"}, "codex-plugin-manifest"),
        ({"name": "Power Context"}, "codex-plugin-manifest"),
        ({"hooks": {"UserPromptSubmit": []}, "description": "x"}, "codex-hooks-file"),
        (
            {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command"}]}]}},
            "codex-hooks-file",
        ),
        (
            {"name": "m", "plugins": [{"name": "p", "source": {"source": "local", "path": "p"}}]},
            "codex-marketplace",
        ),
        ({"name": "m", "plugins": [{"name": "p", "source": "./p"}]}, "claude-code-marketplace"),
    ],
)
def test_the_format_checks_can_fail(document, schema):
    with pytest.raises(jsonschema.ValidationError):
        validate(document, schema + ".schema.json")


def test_no_file_a_team_commits_names_this_machine():
    """Plugin files are copied to other machines: no absolute path, no user name."""
    files = [
        REPO_ROOT / ".claude-plugin" / "marketplace.json",
        REPO_ROOT / ".agents" / "plugins" / "marketplace.json",
        *list(PLUGINS.rglob("*.json")),
    ]
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert str(REPO_ROOT) not in text, path
        assert not re.search(r'"(/|[A-Za-z]:\\\\)(home|Users|usr|opt|tmp|work)\b', text), path


def test_copilot_plugin_registers_its_three_hooks_on_scripts_it_carries():
    """sessionStart, userPromptSubmitted and preCompact (the session's pack again after a
    compaction), each a command on a script in the plugin's own directory."""
    hooks = load(PLUGINS / "copilot" / "hooks.json")
    assert hooks["version"] == 1
    scripts = {}
    for event, handlers in hooks["hooks"].items():
        (handler,) = handlers
        assert handler["type"] == "command"
        assert handler["timeoutSec"] <= 5
        match = re.fullmatch(
            r'python3 -S "\$\{COPILOT_PLUGIN_ROOT\}/scripts/(\w+\.py)"', handler["bash"]
        )
        assert match, handler["bash"]
        assert (PLUGINS / "copilot" / "scripts" / match.group(1)).is_file()
        scripts[event] = match.group(1)
    assert scripts == {
        "sessionStart": "copilot_session_start.py",
        "userPromptSubmitted": "copilot_user_prompt_submitted.py",
        "preCompact": "copilot_pre_compact.py",
    }


def test_plugin_scripts_are_exact_copies_of_the_hooks():
    """The plugins carry copies (the agents copy a plugin directory and skip symlinks);
    ``python3 plugins/sync.py`` refreshes them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_pc_plugins_sync", PLUGINS / "sync.py")
    sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sync)
    pairs = list(sync.copies())
    # Four scripts for each of five agents, and Copilot CLI's preCompact.
    assert len(pairs) == 21
    for source, copy in pairs:
        assert not os.path.islink(copy), copy
        assert Path(copy).read_bytes() == Path(source).read_bytes(), (
            f"{copy} differs from {source}: run python3 plugins/sync.py"
        )


# ------------------------------------------------------------------ the hook, for real


def copy_as_the_agent_does(plugin: Path, cache: Path) -> Path:
    """Regular files and directories only, the way Codex copies a plugin into its cache
    (symlinks are skipped), so a plugin that leans on anything outside itself fails."""
    cache.mkdir(parents=True)
    for entry in plugin.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            copy_as_the_agent_does(entry, cache / entry.name)
        elif entry.is_file():
            shutil.copyfile(entry, cache / entry.name)
    return cache


def seed(server: str, text: str) -> str:
    status, _ = live_post(
        server, "/v1/memory/remember", {"scope_id": SCOPE, "kind": "convention", "text": text}
    )
    assert status in (200, 201)
    return text


def agent_env(tmp_path: Path, server: str, **extra: str) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    from .conftest import LIVE_TOKEN

    return hook_env(
        home,
        POWERCONTEXT_URL=server,
        POWERCONTEXT_API_TOKEN=LIVE_TOKEN,
        POWERCONTEXT_SCOPE_ID=SCOPE,
        POWERCONTEXT_CAPTURE="0",
        **extra,
    )


@pytest.mark.slow
def test_codex_plugin_hook_runs_as_codex_runs_it(powercontext_server, tmp_path):
    text = seed(powercontext_server, "Codex plugin check: vendor the schemas under tests/.")
    root = copy_as_the_agent_does(CODEX_PLUGIN, tmp_path / "cache" / "powercontext" / "0.1.0")
    hooks = load(root / ".codex-plugin" / "plugin.json")["hooks"]
    (group,) = load(root / hooks)["hooks"]["UserPromptSubmit"]
    (handler,) = group["hooks"]
    payload = codex_payload("Where do the plugin schemas live? vendor tests", str(tmp_path))
    validate(payload, "codex-user-prompt-submit.command.input.schema.json")
    # Codex runs `$SHELL -lc <command>` with PLUGIN_ROOT (and CLAUDE_PLUGIN_ROOT) set to
    # the installed plugin's directory (codex-rs/hooks/src/engine/discovery.rs).
    env = agent_env(tmp_path, powercontext_server, PLUGIN_ROOT=str(root))
    env["CLAUDE_PLUGIN_ROOT"] = str(root)
    done = subprocess.run(
        ["/bin/sh", "-lc", handler["command"]],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=handler["timeout"] + 5,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"", done.stderr
    output = json.loads(done.stdout)
    validate(output, "codex-user-prompt-submit.command.output.schema.json")
    assert text in output["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_claude_plugin_hook_runs_as_claude_code_runs_it(powercontext_server, tmp_path):
    text = seed(powercontext_server, "Claude plugin check: the marketplace lives at the root.")
    root = copy_as_the_agent_does(CLAUDE_PLUGIN, tmp_path / "cache" / "powercontext" / "0.1.0")
    manifest = load(root / ".claude-plugin" / "plugin.json")
    (group,) = manifest["hooks"]["UserPromptSubmit"]
    (handler,) = group["hooks"]
    payload = claude_payload("Where does the plugin marketplace live? root", str(tmp_path))
    validate(payload, "claude-code-user-prompt-submit.input.schema.json")
    # Claude Code substitutes ${CLAUDE_PLUGIN_ROOT} in the command, exports it too, and
    # runs the command with the shell.
    command = handler["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(root))
    assert "${" not in command
    env = agent_env(tmp_path, powercontext_server, CLAUDE_PLUGIN_ROOT=str(root))
    done = subprocess.run(
        ["/bin/bash", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=handler["timeout"] + 5,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"", done.stderr
    output = json.loads(done.stdout)
    validate(output, "claude-code-user-prompt-submit.output.schema.json")
    assert text in output["hookSpecificOutput"]["additionalContext"]


def mcp_post(url: str, headers: dict, message: dict) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
            **headers,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.slow
@pytest.mark.parametrize("token", [True, False], ids=["with-token", "without-token"])
def test_claude_plugin_mcp_server_answers_with_the_manifests_url_and_header(token, request):
    """The MCP entry expanded as Claude Code expands ``${VAR:-default}``: tools/list and a
    write then a read work, with a token and, in the README's default setup, without one
    (then the header is ``Bearer`` with nothing after it)."""
    from .conftest import LIVE_TOKEN

    base = request.getfixturevalue(
        "powercontext_server" if token else "powercontext_server_without_token"
    )
    server = load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")["mcpServers"]["powercontext"]
    env = {"POWERCONTEXT_URL": base}
    if token:
        env["POWERCONTEXT_API_TOKEN"] = LIVE_TOKEN

    def expand(value: str) -> str:
        return re.sub(
            r"\$\{([A-Z_]+)(?::-([^}]*))?\}",
            lambda m: env.get(m.group(1)) or (m.group(2) or ""),
            value,
        )

    url = expand(server["url"])
    headers = {name: expand(value) for name, value in server["headers"].items()}
    if not token:
        assert headers == {"Authorization": "Bearer "}
    status, body = mcp_post(url, headers, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200, body
    names = {tool["name"] for tool in body["result"]["tools"]}
    assert "remember_memory" in names
    text = f"Plugin MCP check ({'token' if token else 'no token'}): run make check."
    for number, (name, arguments) in enumerate(
        [
            ("remember_memory", {"scope_id": SCOPE, "kind": "convention", "text": text}),
            ("search_memory", {"scope_id": SCOPE, "query": "plugin MCP check make"}),
        ]
    ):
        message = {
            "jsonrpc": "2.0",
            "id": 2 + number,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        status, body = mcp_post(url, headers, message)
        assert status == 200, body
        assert body["result"]["isError"] is False, body
    hits = body["result"]["structuredContent"]["hits"]
    assert text in [hit["text"] for hit in hits]


def test_the_doctor_knows_the_command_each_plugin_ships():
    """The doctor trusts a plugin copy only when its hook command is exactly this one."""
    from .conftest import load_hook_module

    doctor = load_hook_module("doctor")
    (claude,) = load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")["hooks"]["UserPromptSubmit"]
    (codex,) = load(CODEX_PLUGIN / "hooks" / "hooks.json")["hooks"]["UserPromptSubmit"]
    assert claude["hooks"][0]["command"] == doctor.PLUGIN_COMMANDS["claude"]
    assert codex["hooks"][0]["command"] == doctor.PLUGIN_COMMANDS["codex"]
    (claude,) = load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")["hooks"]["SessionStart"]
    (codex,) = load(CODEX_PLUGIN / "hooks" / "hooks.json")["hooks"]["SessionStart"]
    assert claude["hooks"][0]["command"] == doctor.PLUGIN_SESSION_COMMANDS["claude"]
    assert codex["hooks"][0]["command"] == doctor.PLUGIN_SESSION_COMMANDS["codex"]
