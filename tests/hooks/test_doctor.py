"""The doctor explains, in plain words, what stands between the hook and the server."""

import subprocess
import sys

import pytest

from .conftest import HOOKS_DIR, Reply, hook_env, prepared

DOCTOR = str(HOOKS_DIR / "doctor.py")
INSTALL = str(HOOKS_DIR / "install.py")
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
