"""The doctor explains, in plain words, what stands between the hook and the server."""

import json
import shlex
import shutil
import subprocess
import sys

import pytest

from .conftest import HOOKS_DIR, REPO_ROOT, Reply, hook_env, prepared
from .test_doctor_agents import mcp_route

DOCTOR = str(HOOKS_DIR / "doctor.py")
INSTALL = str(HOOKS_DIR / "install.py")
REPO = shlex.quote(str(REPO_ROOT))  # as the doctor prints it in a fix
CAPS = {"context_versions": ["powercontext.prepared-context.v1"], "source_types": ["content"]}


def healthy_routes():
    return {
        "/health/live": Reply(200, {"status": "ok"}),
        "/v1/capabilities": Reply(200, CAPS),
        "/v1/context/prepare": Reply(200, prepared(None)),
    }


def doctor(home, url, *args, **env):
    return subprocess.run(
        [sys.executable, DOCTOR, "--home", str(home), "--cwd", str(home), "--no-agent", *args],
        capture_output=True,
        text=True,
        env=hook_env(home, POWERCONTEXT_URL=url, **env),
        check=False,
        timeout=30,
    )


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_all_good_after_install(home, fake_server):
    server = fake_server(healthy_routes())
    subprocess.run(
        [
            sys.executable,
            INSTALL,
            "--home",
            str(home),
            "--agent",
            "codex",
            "--python",
            sys.executable,
        ],
        check=True,
        capture_output=True,
        env=hook_env(home),
    )
    done = doctor(home, server.url, "--agent", "codex")
    assert done.returncode == 0, done.stdout
    assert "All good." in done.stdout
    assert "prepare works" in done.stdout
    assert "this checkout's hook" in done.stdout
    assert "outcome empty" in done.stdout
    assert "/hooks" in done.stdout
    # the doctor never writes: no capture even from the hook run
    assert "/v1/sources/content" not in server.paths()


def test_missing_installation_is_reported(home, fake_server):
    server = fake_server(healthy_routes())
    done = doctor(home, server.url, "--agent", "claude")
    assert done.returncode == 1
    assert "no PowerContext hook registered for claude" in done.stdout
    assert "install.py --agent claude" in done.stdout


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_an_installed_plugin_is_found_and_run(agent, home, fake_server):
    """The plugin as the agent keeps it: a copy under its plugin cache."""
    import shutil

    from .conftest import REPO_ROOT

    agent_dir = {"codex": ".codex", "claude": ".claude"}[agent]
    cache = home / agent_dir / "plugins" / "cache" / "powercontext" / "powercontext" / "0.1.0"
    shutil.copytree(REPO_ROOT / "plugins" / agent, cache)
    server = fake_server(healthy_routes())
    done = doctor(home, server.url, "--agent", agent)
    assert done.returncode == 0, done.stdout
    assert f"registered in {cache}" in done.stdout
    assert "this checkout's hook" in done.stdout
    assert "outcome empty" in done.stdout


def test_server_down(home, refused_url):
    done = doctor(home, refused_url, "--no-hook-run")
    assert done.returncode == 1
    assert f"Nothing answers at {refused_url}" in done.stdout
    assert "manage.py serve" in done.stdout


@pytest.mark.parametrize(
    ("token", "words"),
    [
        (None, "POWERCONTEXT_API_TOKEN is not set"),
        ("tok-XYZZY-777", "rejected POWERCONTEXT_API_TOKEN"),
    ],
    ids=["missing", "wrong"],
)
def test_authentication(token, words, home, fake_server):
    routes = healthy_routes()
    routes["/v1/capabilities"] = Reply(401, {"error": {"code": "unauthorized"}})
    routes["/v1/context/prepare"] = Reply(401, {"error": {"code": "unauthorized"}})
    server = fake_server(routes)
    env = {"POWERCONTEXT_API_TOKEN": token} if token else {}
    done = doctor(home, server.url, "--no-hook-run", **env)
    assert done.returncode == 1
    assert words in done.stdout
    assert "XYZZY" not in done.stdout + done.stderr, "the token is never printed"


def test_older_server(home, fake_server):
    server = fake_server({"/health/live": Reply(200, {"status": "ok"})})
    done = doctor(home, server.url, "--no-hook-run")
    assert done.returncode == 1
    assert "predates the Context Pack" in done.stdout


def test_redirect_is_explained(home, fake_server):
    routes = healthy_routes()
    routes["/v1/context/prepare"] = Reply(302, headers={"Location": "https://sso.example/login"})
    server = fake_server(routes)
    done = doctor(home, server.url, "--no-hook-run")
    assert done.returncode == 1
    assert "redirected to https://sso.example/login" in done.stdout
    assert "never follows redirects" in done.stdout


def test_contract_violation_is_explained(home, fake_server):
    routes = healthy_routes()
    routes["/v1/context/prepare"] = Reply(200, prepared("abc", content_bytes=4))
    server = fake_server(routes)
    done = doctor(home, server.url, "--no-hook-run")
    assert done.returncode == 1
    assert "content_bytes mismatch" in done.stdout


def test_insecure_remote_url_is_explained(home):
    done = doctor(home, "http://192.0.2.1:8000", "--no-hook-run")
    assert done.returncode == 1
    assert "POWERCONTEXT_ALLOW_INSECURE_HTTP" in done.stdout


def test_recall_off_is_a_problem(home, fake_server):
    server = fake_server(healthy_routes())
    done = doctor(home, server.url, "--no-hook-run", POWERCONTEXT_RECALL="0")
    assert "recall is switched off" in done.stdout
    assert done.returncode == 1


# ------------------------------------------- Gemini CLI, Copilot CLI and OpenCode


def install_plugin(agent: str, home, url: str, mcp: bool = True):
    """The plugin where the agent keeps it once installed (see doctor.plugin_copy), with
    the agent's PowerContext MCP entry unless ``mcp`` is false."""
    if agent == "gemini":
        root = home / ".gemini" / "extensions" / "powercontext"
    elif agent == "copilot":
        root = home / ".copilot" / "installed-plugins" / "powercontext" / "powercontext"
    else:
        root = home / "clone" / "plugins" / "opencode"
    shutil.copytree(
        REPO_ROOT / "plugins" / agent, root, ignore=shutil.ignore_patterns("__pycache__")
    )
    if agent == "opencode":  # what `opencode plugin file://<root> --global` writes
        config = home / ".config" / "opencode"
        config.mkdir(parents=True)
        (config / "opencode.json").write_text(json.dumps({"plugin": [f"file://{root}"]}))
    if agent == "gemini" and not mcp:
        manifest = json.loads((root / "gemini-extension.json").read_text())
        del manifest["mcpServers"]
        (root / "gemini-extension.json").write_text(json.dumps(manifest))
    if agent == "copilot" and mcp:  # what `copilot mcp add` writes
        entry = {"type": "http", "url": url + "/mcp", "headers": {}}
        listing = {"mcpServers": {"powercontext": entry}}
        (home / ".copilot" / "mcp-config.json").write_text(json.dumps(listing))
    return root


def plugin_doctor(agent: str, home, url: str):
    return subprocess.run(
        [
            sys.executable,
            DOCTOR,
            "--home",
            str(home),
            "--cwd",
            str(home),
            "--agent",
            agent,
            "--no-hook-run",
        ],
        capture_output=True,
        text=True,
        env=hook_env(home, POWERCONTEXT_URL=url),
        check=False,
        timeout=30,
    )


PLUGIN_AGENTS = {"gemini": "Gemini CLI", "copilot": "Copilot CLI", "opencode": "OpenCode"}


@pytest.fixture
def mcp_server(fake_server):
    return fake_server({**healthy_routes(), "/mcp": mcp_route([])})


@pytest.mark.parametrize("agent", sorted(PLUGIN_AGENTS))
def test_an_installed_agent_plugin_is_all_good(agent, home, mcp_server):
    root = install_plugin(agent, home, mcp_server.url)
    done = plugin_doctor(agent, home, mcp_server.url)
    assert done.returncode == 0, done.stdout
    assert f"runs the hook from {root / 'scripts'}" in done.stdout
    assert f"{PLUGIN_AGENTS[agent]}'s MCP entry answers tools/list and a read" in done.stdout
    assert "All good." in done.stdout


@pytest.mark.parametrize(
    ("agent", "fix"),
    [
        ("gemini", "gemini extensions install {repo}/plugins/gemini --consent"),
        ("copilot", "copilot plugin install {repo}/plugins/copilot"),
        ("opencode", "opencode plugin file://{repo}/plugins/opencode --global"),
    ],
)
def test_an_agent_plugin_not_installed(agent, fix, home, mcp_server):
    done = plugin_doctor(agent, home, mcp_server.url)
    assert done.returncode == 1
    line = f"the PowerContext plugin is not installed in {PLUGIN_AGENTS[agent]}. Fix: "
    assert line + fix.format(repo=REPO) in done.stdout


@pytest.mark.parametrize(
    ("agent", "fix"),
    [
        ("gemini", "gemini extensions uninstall powercontext && gemini extensions install"),
        ("copilot", "copilot plugin uninstall powercontext && copilot plugin install"),
        ("opencode", "opencode plugin file://{repo}/plugins/opencode --global --force"),
    ],
)
def test_a_stale_agent_plugin_copy(agent, fix, home, mcp_server):
    root = install_plugin(agent, home, mcp_server.url)
    with open(root / "scripts" / "powercontext_hook.py", "a") as handle:
        handle.write("# changed\n")
    done = plugin_doctor(agent, home, mcp_server.url)
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "runs the hook from" in line]
    shown = json.dumps(str(root / "scripts"))  # a path from the agent's files, quoted
    assert f"{PLUGIN_AGENTS[agent]} runs the hook from {shown}" in line
    assert "powercontext_hook.py differ from this checkout's hooks/" in line
    assert "Fix: " + fix.format(repo=REPO) in line


@pytest.mark.parametrize("agent", ["gemini", "copilot"])
def test_an_agent_plugin_without_its_mcp_entry(agent, home, mcp_server):
    """OpenCode has no such line: its plugin builds the entry from the environment."""
    install_plugin(agent, home, mcp_server.url, mcp=False)
    done = plugin_doctor(agent, home, mcp_server.url)
    assert done.returncode == 1
    fix = {
        "gemini": "start Gemini CLI with POWERCONTEXT_URL (the server's address, now"
        f" {mcp_server.url}) and, if the server has a token, POWERCONTEXT_API_TOKEN set",
        "copilot": f"copilot mcp add --transport http powercontext {mcp_server.url}/mcp",
    }[agent]
    line = f"{PLUGIN_AGENTS[agent]} has no PowerContext MCP server, so no tools. Fix: {fix}"
    assert line in done.stdout


@pytest.mark.parametrize("agent", sorted(PLUGIN_AGENTS))
def test_an_agent_plugin_with_the_server_down(agent, home, refused_url):
    install_plugin(agent, home, refused_url)
    done = plugin_doctor(agent, home, refused_url)
    assert done.returncode == 1
    assert f"Nothing answers at {refused_url}" in done.stdout
    line = f"{PLUGIN_AGENTS[agent]}'s MCP tools cannot work while the server is down (above)"
    assert line + ": start it first" in done.stdout
    assert "MCP entry:" not in done.stdout


def test_a_copilot_plugin_copy_without_the_compaction_hook_is_stale(home, mcp_server):
    """A copy installed before the preCompact hook existed gives no pack after a
    compaction: the doctor says to reinstall."""
    root = install_plugin("copilot", home, mcp_server.url)
    (root / "scripts" / "copilot_pre_compact.py").unlink()
    done = plugin_doctor("copilot", home, mcp_server.url)
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "runs the hook from" in line]
    assert "copilot_pre_compact.py differ from this checkout's hooks/" in line
    assert "Fix: copilot plugin uninstall powercontext && copilot plugin install" in line
